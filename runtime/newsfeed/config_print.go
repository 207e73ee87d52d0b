package newsfeed

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// Format writes the configuration as TOML with every key and its value,
// defaults filled in, that ParseConfig reads back to the same
// configuration (what `newsfeed config` prints). Top-level keys come
// first, then [[incoming]], [[peer]] and [cluster] tables in the order of
// the Config type.
func (c *Config) Format() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# newsfeed configuration from %s, every default filled in\n", c.Source)
	var tables []reflect.StructField
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tomlName(f) == "" {
			continue
		}
		if isTable(f.Type) {
			tables = append(tables, f)
			continue
		}
		writeKey(&b, tomlName(f), v.Field(i))
	}
	for _, f := range tables {
		fv := v.FieldByIndex(f.Index)
		name := tomlName(f)
		switch fv.Kind() {
		case reflect.Slice:
			for j := 0; j < fv.Len(); j++ {
				fmt.Fprintf(&b, "\n[[%s]]\n", name)
				writeTable(&b, fv.Index(j))
			}
		case reflect.Pointer:
			if !fv.IsNil() {
				fmt.Fprintf(&b, "\n[%s]\n", name)
				writeTable(&b, fv.Elem())
			}
		}
	}
	return b.Bytes()
}

// tomlName is a field's TOML key; "" for fields the file does not set.
func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if !f.IsExported() || name == "-" {
		return ""
	}
	return name
}

// isTable reports whether a field's type is a table or an array of
// tables.
func isTable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

func writeTable(b *bytes.Buffer, v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name := tomlName(t.Field(i)); name != "" {
			writeKey(b, name, v.Field(i))
		}
	}
}

func writeKey(b *bytes.Buffer, name string, v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	fmt.Fprintf(b, "%s = %s\n", name, tomlValue(v))
}

// tomlValue is v as a TOML literal: durations and sizes in the
// configuration grammar ("5m", "256M"), strings quoted.
func tomlValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case tomlconf.Duration:
		return tomlString(x.String())
	case tomlconf.Size:
		if x != 0 && x%1024 == 0 {
			return tomlString(x.String())
		}
		return strconv.FormatInt(int64(x), 10)
	case string:
		return tomlString(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return tomlFloat(x)
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = tomlString(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	panic(fmt.Sprintf("newsfeed: no TOML form for %s", v.Type()))
}

// tomlFloat is x as a TOML float: always with a fraction or exponent, so
// that it reads back as a float ("95.0"), and inf and nan as TOML writes
// them.
func tomlFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
