package option

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TypeSize is a byte count, a whole number with an optional unit: B, kB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), as in
// 512MiB or 10GB.
const TypeSize FieldType = "size"

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// ParseSize reads a byte count such as 1048576, 512KiB or 10GB. A leading
// minus sign gives a negative count, for the caller to refuse by its bounds.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	sign := int64(1)
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = -1, rest
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(s)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if i == 0 || !ok {
		return 0, fmt.Errorf("%q is not a size such as 1048576, 512KiB or 10GB", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return sign * n * unit, nil
}

func decodeSize(f Field, raw any) (any, error) {
	var n int64
	var err error
	switch x := raw.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case string:
		n, err = ParseSize(x)
	default:
		err = fmt.Errorf("expects a size such as 1048576, 512KiB or 10GB")
	}
	if err == nil && n < f.Min {
		err = fmt.Errorf("must be at least %d", f.Min)
	}
	if err != nil {
		return nil, &Error{Field: f.Name, Value: fmt.Sprint(raw), Msg: strings.TrimPrefix(err.Error(), fmt.Sprintf("%q ", raw))}
	}
	return n, nil
}

// Size returns a size field in bytes.
func (v *Values) Size(name string) int64 { return v.vals[name].(int64) }
