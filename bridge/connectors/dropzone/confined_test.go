//go:build unix

package dropzone_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnlyTheConfinedFSTouchesFiles enforces that the connector reaches
// files only through core.FS: its code imports no package that opens paths
// (os, io/ioutil, x/sys/unix), and uses syscall for error numbers only.
func TestOnlyTheConfinedFSTouchesFiles(t *testing.T) {
	forbidden := map[string]bool{"os": true, "io/ioutil": true, "golang.org/x/sys/unix": true}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			assert.False(t, forbidden[p], "%s imports %s: reach files through core.FS only", name, p)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch fn := sel.Sel.Name; {
			case pkg.Name == "syscall" && !strings.HasPrefix(fn, "E"):
				t.Errorf("%s uses syscall.%s: only error numbers are allowed", name, fn)
			case pkg.Name == "filepath" && (strings.HasPrefix(fn, "Walk") || fn == "Glob" || fn == "EvalSymlinks"):
				t.Errorf("%s uses filepath.%s, which reads the filesystem", name, fn)
			}
			return true
		})
	}
	assert.GreaterOrEqual(t, checked, 4, "source, target, state and shared files")
}
