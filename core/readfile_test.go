package core

import (
	"bytes"
	"fmt"
	"testing"
)

func TestReadFileWithAnyHint(t *testing.T) {
	fsys := newRootFS(t)
	for _, size := range []int{0, 1, 100, 511, 512, 5000, 70_000, 200_000} {
		name := fmt.Sprintf("f%d", size)
		want := bytes.Repeat([]byte("abcdefg"), size/7+1)[:size]
		f, err := fsys.CreateExcl(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(want); err != nil {
			t.Fatal(err)
		}
		f.Close()
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
