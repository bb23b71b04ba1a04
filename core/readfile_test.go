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

// sizedOnly is openOnly whose files report a size at open: the real one
// plus skew, as when a file grew (skew < 0) or shrank (skew > 0) since.
type sizedOnly struct {
	openOnly
	skew int64
}

type sizedFile struct {
	*os.File
	size int64
}

func (f sizedFile) OpenSize() int64 { return f.size }

func (o sizedOnly) Open(name string) (File, error) {
	f, err := o.r.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return sizedFile{f, max(0, fi.Size()+o.skew)}, nil
}

func TestReadFileSized(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, size := range []int{0, 1, 100, 5000, 70_000} {
		name := fmt.Sprintf("f%d", size)
		want := bytes.Repeat([]byte("abcdefg"), size/7+1)[:size]
		if err := r.WriteFile(name, want, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, skew := range []int64{0, -1, 1, 100} {
			fsys := sizedOnly{openOnly{r: r}, skew}
			n := min(size, max(0, size+int(skew))) // grown: what the size at open covers
			got, err := readFile(fsys, name, 0)
			if err != nil || !bytes.Equal(got, want[:n]) {
				t.Errorf("readFile(size %d, skew %d) = %d bytes, %v; want %d", size, skew, len(got), err, n)
			}
			if skew == 0 && cap(got) != size {
				t.Errorf("readFile(size %d) made a buffer of %d bytes", size, cap(got))
			}
			scratch := make([]byte, 10)
			got, err = readWhole(fsys, name, 0, func(int) []byte { return scratch }, scratch)
			if err != nil || !bytes.Equal(got, want[:n]) {
				t.Errorf("readWhole(size %d, skew %d) into scratch = %d bytes, %v", size, skew, len(got), err)
			}
			if skew == 0 && size <= cap(scratch) && size > 0 && &got[0] != &scratch[0] {
				t.Errorf("readWhole(size %d) did not use the scratch buffer", size)
			}
		}
	}
}
