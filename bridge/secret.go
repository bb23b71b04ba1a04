package bridge

import (
	"fmt"
	"os"
	"strings"

	"github.com/mqb-project/mqb/core/option"
)

// SecretFileField is the option that reads the secret option name from a
// file (name_file), for connectors to add beside name.
func SecretFileField(name string) option.Field {
	return option.Field{Name: name + "_file", Type: option.TypeString,
		Doc: fmt.Sprintf("Read %s from this file (a mounted secret) instead of writing it in the URL or route file; one trailing newline is dropped. Cannot be combined with %s.", name, name)}
}

// Secret returns the value of the secret option name: the option itself,
// or the content of the file its name_file option names. Giving both is an
// *option.Error, and so is a file that cannot be read.
func Secret(v *option.Values, name string) (string, error) {
	val, file := v.String(name), v.String(name+"_file")
	if file == "" {
		return val, nil
	}
	if val != "" {
		return "", &option.Error{Field: name + "_file", Msg: "cannot be combined with " + name + ": give one of them"}
	}
	return ReadSecretFile(file, name+"_file")
}

// ReadSecretFile returns the secret in file without one trailing newline.
// Errors are *option.Error values for the option field.
func ReadSecretFile(file, field string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &option.Error{Field: field, Value: file, Msg: "cannot be read: " + strings.TrimPrefix(err.Error(), "open "+file+": ")}
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", &option.Error{Field: field, Value: file, Msg: "is empty"}
	}
	return s, nil
}
