package records

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
)

// ContentTypeField is the content_type option of a record source.
var ContentTypeField = option.Field{Name: "content_type", Type: option.TypeString,
	Doc: "content_type metadata of every message (default: application/json for json and csv, text/plain; charset=utf-8 for lines, application/octet-stream for raw)."}

// SourceField is the source option of a record source.
func SourceField(def string) option.Field {
	return option.Field{Name: "source", Type: option.TypeString, Default: def,
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
func AbsPath(v *option.Values) (string, error) {
	p := v.String("path")
	if !filepath.IsAbs(p) {
		return "", &option.Error{Field: "path", Value: p, Msg: "must be an absolute path"}
	}
	return filepath.Clean(p), nil
}
