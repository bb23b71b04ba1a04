package benchrun

// Machine describes where a report was measured.
type Machine struct {
	Dir          string `json:"dir"`
	FSType       string `json:"fs_type"`  // from statfs: ext4, xfs, tmpfs, apfs, ufs, ...
	FSMagic      string `json:"fs_magic"` // Linux statfs f_type in hex; empty elsewhere
	Device       string `json:"device,omitempty"`
	MountPoint   string `json:"mount_point,omitempty"`
	MountOptions string `json:"mount_options,omitempty"`
	Kernel       string `json:"kernel"`
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go_version"`
	GOARCH       string `json:"goarch"`
	// MemoryReporting says how a virtual machine hands freed memory back
	// to its host ("" when it does not, or where it is not looked up).
	MemoryReporting string `json:"memory_reporting,omitempty"`
}
