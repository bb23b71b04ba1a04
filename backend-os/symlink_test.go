//go:build linux

package osfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// TestSymlinksRefused plants links inside the root, to a directory and a
// file outside it and to a directory inside it, and checks that no
// operation goes through any of them.
func TestSymlinksRefused(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		outside := t.TempDir()
		writeFile(t, filepath.Join(outside, "secret"), "secret")
		require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "filelink")))
		require.NoError(t, os.Symlink(outside, filepath.Join(root, "dirlink")))
		require.NoError(t, os.Symlink(filepath.Join(outside, "new"), filepath.Join(root, "dangling")))
		require.NoError(t, fsys.Mkdir("sub"))
		require.NoError(t, os.Symlink("sub", filepath.Join(root, "innerlink")))
		createFS(t, fsys, "a", "A")

		refused := map[string]func() (string, error){
			"Open file link":          func() (string, error) { _, err := fsys.Open("filelink"); return "filelink", err },
			"Open through dir link":   func() (string, error) { _, err := fsys.Open("dirlink/secret"); return "dirlink/secret", err },
			"ReadWholeFile file link": func() (string, error) { _, err := fsys.ReadWholeFile("filelink", nil); return "filelink", err },
			"ReadWholeFile dir link": func() (string, error) {
				_, err := fsys.ReadWholeFile("dirlink/secret", nil)
				return "dirlink/secret", err
			},
			"ReadWholeFiles dir link": func() (string, error) {
				reads := []core.WholeRead{{Name: "dirlink/secret"}}
				fsys.ReadWholeFiles(reads)
				return "dirlink/secret", reads[0].Err
			},
			"CreateExcl via dir link": func() (string, error) { _, err := fsys.CreateExcl("dirlink/new"); return "dirlink/new", err },
			"CreateExcl via inner":    func() (string, error) { _, err := fsys.CreateExcl("innerlink/new"); return "innerlink/new", err },
			"WriteNewFile dangling": func() (string, error) {
				_, err := fsys.WriteNewFile("dirlink/new", []byte("x"), false)
				return "dirlink/new", err
			},
			"WriteNewFile via inner": func() (string, error) {
				_, err := fsys.WriteNewFile("innerlink/new", []byte("x"), true)
				return "innerlink/new", err
			},
			"ReadDir dir link":        func() (string, error) { _, err := fsys.ReadDir("dirlink"); return "dirlink", err },
			"ReadDir inner link":      func() (string, error) { _, err := fsys.ReadDir("innerlink"); return "innerlink", err },
			"Rename into dir link":    func() (string, error) { return "a -> dirlink/a", fsys.Rename("a", "dirlink/a") },
			"Rename out of dir link":  func() (string, error) { return "dirlink/secret -> b", fsys.Rename("dirlink/secret", "b") },
			"Remove through dir link": func() (string, error) { return "dirlink/secret", fsys.Remove("dirlink/secret") },
			"Mkdir through dir link":  func() (string, error) { return "dirlink/d", fsys.Mkdir("dirlink/d") },
			"Stat through dir link":   func() (string, error) { _, err := fsys.Stat("dirlink/secret"); return "dirlink/secret", err },
			"SyncDir dir link":        func() (string, error) { return "dirlink", fsys.SyncDir("dirlink") },
			"Lock file link":          func() (string, error) { _, err := fsys.Lock("filelink"); return "filelink", err },
			"Lock dangling link":      func() (string, error) { _, err := fsys.Lock("dangling"); return "dangling", err },
			"Lock through dir link":   func() (string, error) { _, err := fsys.Lock("dirlink/LOCK"); return "dirlink/LOCK", err },
		}
		if dw, ok := any(fsys).(core.DirWatcher); ok {
			refused["WatchDir dir link"] = func() (string, error) { _, err := dw.WatchDir("dirlink"); return "dirlink", err }
			refused["WatchDir inner link"] = func() (string, error) { _, err := dw.WatchDir("innerlink"); return "innerlink", err }
		}
		for name, call := range refused {
			path, err := call()
			requirePathErr(t, err, path, osfs.ErrSymlink)
			require.Contains(t, err.Error(), "symbolic link", name)
		}

		// CreateExcl on a dangling link is "exists", and creates nothing.
		_, err := fsys.CreateExcl("dangling")
		requirePathErr(t, err, "dangling", fs.ErrExist)

		// Nothing was created, moved or removed outside the root.
		entries, err := os.ReadDir(outside)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, "secret", entries[0].Name())
		require.Equal(t, "A", readFS(t, fsys, "a"))

		// A link itself can be listed, described, renamed and removed; its
		// target is untouched.
		fi, err := fsys.Stat("filelink")
		require.NoError(t, err)
		require.Equal(t, fs.ModeSymlink, fi.Mode().Type())
		require.NoError(t, fsys.Rename("filelink", "moved"))
		require.NoError(t, fsys.Remove("moved"))
		require.FileExists(t, filepath.Join(outside, "secret"))
	})
}
