package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// show prints an answer: body, the server's JSON, as it is with -o json, or
// the table fill writes.
func (c *cmd) show(body []byte, fill func(t *table)) int {
	if c.s.cfg.Output == "json" {
		writeJSON(c.s.stdout, body)
		return exitOK
	}
	return c.showTable(fill)
}

// showValue prints v, an answer the command assembled (several pages, a
// part of one), as JSON with -o json, or the table fill writes.
func (c *cmd) showValue(v any, fill func(t *table)) int {
	if c.s.cfg.Output == "json" {
		b, err := json.Marshal(v)
		if err != nil {
			return c.fail(errorf(codeInvalidAnswer, "%v", err))
		}
		writeJSON(c.s.stdout, b)
		return exitOK
	}
	return c.showTable(fill)
}

func (c *cmd) showTable(fill func(t *table)) int {
	t := &table{tw: tabwriter.NewWriter(c.s.stdout, 0, 4, 2, ' ', 0)}
	fill(t)
	if err := t.tw.Flush(); err != nil {
		return exitFailure
	}
	return exitOK
}

// writeJSON writes one JSON document on a line of its own.
func writeJSON(w io.Writer, b []byte) {
	_, _ = w.Write(b)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		_, _ = io.WriteString(w, "\n")
	}
}

// table writes aligned columns: a header row, then one row per item.
type table struct{ tw *tabwriter.Writer }

func (t *table) header(names ...string) { t.row(toAny(names)...) }

func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, v := range cells {
		s[i] = cell(v)
	}
	fmt.Fprintln(t.tw, strings.Join(s, "\t"))
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// cell formats one value so that it stays one cell: nil or empty is "-",
// a pointer its value, a string with tabs, newlines or other control
// characters is quoted.
func cell(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "-"
		}
		v = rv.Elem().Interface()
	}
	var s string
	switch x := v.(type) {
	case nil:
		return "-"
	case float32, float64:
		s = fmt.Sprintf("%.1f", x)
	default:
		s = fmt.Sprint(v)
	}
	if s == "" {
		return "-"
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// ms formats Unix milliseconds as UTC time; 0 is "-".
func ms(v int64) string {
	if v <= 0 {
		return "-"
	}
	return time.UnixMilli(v).UTC().Format(time.RFC3339)
}

// ids formats node ids as 1,2,3.
func ids(v []int64) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}
