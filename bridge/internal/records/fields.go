package records

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
)

// ContentTypeField is the content_type option of a record source.
var ContentTypeField = core.Field{Name: "content_type", Type: core.TypeString,
	Doc: "content_type metadata of every message (default: application/json for json and csv, text/plain; charset=utf-8 for lines, application/octet-stream for raw)."}

// SourceField is the source option of a record source.
func SourceField(def string) core.Field {
	return core.Field{Name: "source", Type: core.TypeString, Default: def,
		Doc: "source metadata of every message (default: the input file's name without its extension, or stdin)."}
}

// SourceName is the default source metadata of a file: its base name
// without the extension.
func SourceName(path string) string {
	base := filepath.Base(path)
	if i := strings.IndexByte(base[1:], '.'); i >= 0 {
		return base[:i+1]
	}
	return base
}

// Meta returns the metadata of a record read from path ("" for stdin).
func Meta(contentType, source, path string, rec Record) map[string]string {
	md := map[string]string{bridge.MetaContentType: contentType, bridge.MetaSource: source}
	if path != "" {
		md[bridge.MetaPath] = path
	}
	if rec.Line > 0 {
		md[bridge.MetaLine] = strconv.Itoa(rec.Line)
	}
	return md
}

// AbsPath returns the path option, refusing a relative one.
func AbsPath(v *core.Values) (string, error) {
	p := v.String("path")
	if !filepath.IsAbs(p) {
		return "", &core.OptionError{Field: "path", Value: p, Msg: "must be an absolute path"}
	}
	return filepath.Clean(p), nil
}
