package core

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// openOnly is an FS that can only open the files of an os.Root, which is all
// readFile needs; any other method panics on the nil FS. The spool itself is
// tested on real backends by the conformance suite (conformance's TestRootFS
// and each backend's TestConformance): core cannot import a backend.
type openOnly struct {
	FS
	r *os.Root
}

func (o openOnly) Open(name string) (File, error) {
	f, err := o.r.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func TestReadFileWithAnyHint(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fsys := openOnly{r: r}
	for _, size := range []int{0, 1, 100, 511, 512, 5000, 70_000, 200_000} {
		name := fmt.Sprintf("f%d", size)
		want := bytes.Repeat([]byte("abcdefg"), size/7+1)[:size]
		if err := r.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, hint := range []int{-1, 0, 1, 99, 100, 101, 4096, maxReadHint, maxReadHint + 1, 1 << 20} {
			got, err := readFile(fsys, name, hint)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("readFile(size %d, hint %d) = %d bytes, %v", size, hint, len(got), err)
			}
			if cap(got) > 4096 && len(got) < cap(got)/2 && hint > 0 && hint <= maxReadHint {
				t.Errorf("readFile(size %d, hint %d) kept a buffer of %d bytes", size, hint, cap(got))
			}
		}
	}
}
