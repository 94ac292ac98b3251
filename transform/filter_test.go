package transform

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const order = `{"id":"o-1","amount":12.5,"qty":3,"paid":true,"note":null,` +
	`"status":"pa\u0069d","customer":{"id":7,"tier":"gold","addr":{"city":"Lyon"}},` +
	`"tags":["a","b"],"day":"2026-01-02","big":1e400}`

func TestFilterKeepsExactlyTheRecordsThatMatch(t *testing.T) {
	cases := []struct {
		name string
		cfg  FilterConfig
		want bool
	}{
		{"eq string", FilterConfig{Field: "id", Op: OpEq, Value: "o-1"}, true},
		{"eq string other", FilterConfig{Field: "id", Op: OpEq, Value: "o-2"}, false},
		{"eq string with escape", FilterConfig{Field: "status", Op: OpEq, Value: "paid"}, true},
		{"eq number int config", FilterConfig{Field: "qty", Op: OpEq, Value: 3}, true},
		{"eq number float", FilterConfig{Field: "amount", Op: OpEq, Value: 12.5}, true},
		{"eq number json.Number", FilterConfig{Field: "amount", Op: OpEq, Value: json.Number("12.50")}, true},
		{"eq number vs string is false", FilterConfig{Field: "qty", Op: OpEq, Value: "3"}, false},
		{"eq bool", FilterConfig{Field: "paid", Op: OpEq, Value: true}, true},
		{"eq bool false", FilterConfig{Field: "paid", Op: OpEq, Value: false}, false},
		{"eq null", FilterConfig{Field: "note", Op: OpEq, Value: nil}, true},
		{"eq null vs string", FilterConfig{Field: "id", Op: OpEq, Value: nil}, false},
		{"eq object is false", FilterConfig{Field: "customer", Op: OpEq, Value: "x"}, false},
		{"ne", FilterConfig{Field: "id", Op: OpNe, Value: "o-2"}, true},
		{"ne same", FilterConfig{Field: "id", Op: OpNe, Value: "o-1"}, false},
		{"ne other type", FilterConfig{Field: "qty", Op: OpNe, Value: "3"}, true},
		{"ne missing is false", FilterConfig{Field: "nope", Op: OpNe, Value: "x"}, false},
		{"gt", FilterConfig{Field: "amount", Op: OpGt, Value: 12}, true},
		{"gt equal", FilterConfig{Field: "amount", Op: OpGt, Value: 12.5}, false},
		{"gte equal", FilterConfig{Field: "amount", Op: OpGte, Value: 12.5}, true},
		{"lt", FilterConfig{Field: "qty", Op: OpLt, Value: int64(4)}, true},
		{"lt false", FilterConfig{Field: "qty", Op: OpLt, Value: uint8(3)}, false},
		{"lte equal", FilterConfig{Field: "qty", Op: OpLte, Value: float32(3)}, true},
		{"gt huge number", FilterConfig{Field: "big", Op: OpGt, Value: 1e300}, true},
		{"gt string byte-wise", FilterConfig{Field: "day", Op: OpGt, Value: "2026-01-01"}, true},
		{"lt string byte-wise", FilterConfig{Field: "day", Op: OpLt, Value: "2026-01-01"}, false},
		{"lte escaped string", FilterConfig{Field: "status", Op: OpLte, Value: "paid"}, true},
		{"gt string vs number is false", FilterConfig{Field: "id", Op: OpGt, Value: 1}, false},
		{"gt bool is false", FilterConfig{Field: "paid", Op: OpGt, Value: 0}, false},
		{"gt missing", FilterConfig{Field: "nope", Op: OpGt, Value: 0}, false},
		{"exists", FilterConfig{Field: "id", Op: OpExists}, true},
		{"exists null", FilterConfig{Field: "note", Op: OpExists}, true},
		{"exists missing", FilterConfig{Field: "nope", Op: OpExists}, false},
		{"not_exists missing", FilterConfig{Field: "nope", Op: OpNotExists}, true},
		{"not_exists present", FilterConfig{Field: "id", Op: OpNotExists}, false},
		{"not_exists nested missing", FilterConfig{Field: "customer.nope", Op: OpNotExists}, true},
		{"in values", FilterConfig{Field: "customer.tier", Op: OpIn, Values: []any{"silver", "gold"}}, true},
		{"in value list", FilterConfig{Field: "qty", Op: OpIn, Value: []any{1, 2, 3}}, true},
		{"in none", FilterConfig{Field: "qty", Op: OpIn, Values: []any{1, "3", true}}, false},
		{"in missing", FilterConfig{Field: "nope", Op: OpIn, Values: []any{1}}, false},
		{"nested eq", FilterConfig{Field: "customer.id", Op: OpEq, Value: 7}, true},
		{"deeply nested", FilterConfig{Field: "customer.addr.city", Op: OpEq, Value: "Lyon"}, true},
		{"path through non-object", FilterConfig{Field: "id.x", Op: OpExists}, false},
		{"path through array", FilterConfig{Field: "tags.0", Op: OpExists}, false},
		{"all true", FilterConfig{All: []FilterConfig{{Field: "paid", Op: OpEq, Value: true}, {Field: "qty", Op: OpGte, Value: 3}}}, true},
		{"all one false", FilterConfig{All: []FilterConfig{{Field: "paid", Op: OpEq, Value: true}, {Field: "qty", Op: OpGt, Value: 3}}}, false},
		{"any one true", FilterConfig{Any: []FilterConfig{{Field: "nope", Op: OpExists}, {Field: "qty", Op: OpEq, Value: 3}}}, true},
		{"any none", FilterConfig{Any: []FilterConfig{{Field: "nope", Op: OpExists}, {Field: "qty", Op: OpEq, Value: 4}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFilter(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rec(order)
			if got := mustApply(t, f, r); got != tc.want {
				t.Errorf("keep = %v, want %v", got, tc.want)
			}
			if string(r.Value) != order {
				t.Errorf("filter changed the value: %s", r.Value)
			}
		})
	}
}

func TestFilterDuplicateKeyLastOneCounts(t *testing.T) {
	f, _ := NewFilter(FilterConfig{Field: "a.b", Op: OpEq, Value: 2})
	if !mustApply(t, f, rec(`{"a":{"b":1,"b":2},"a":{"b":1,"b":2}}`)) {
		t.Error("want the last duplicate key to count")
	}
	g, _ := NewFilter(FilterConfig{Field: "k", Op: OpEq, Value: 2})
	if !mustApply(t, g, rec(`{"k":1,"\u006b":2}`)) {
		t.Error("escaped key should match its decoded name")
	}
	h, _ := NewFilter(FilterConfig{Field: "o.k", Op: OpEq, Value: 2})
	if !mustApply(t, h, rec(`{"o":{"\u006b":2}}`)) {
		t.Error("escaped nested key should match its decoded name")
	}
}

func TestFilterConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		cfg  FilterConfig
		want string
	}{
		{FilterConfig{Op: OpEq, Value: 1}, "filter.field: is required"},
		{FilterConfig{Field: "a"}, "filter.op: is required"},
		{FilterConfig{Field: "a", Op: "like"}, `filter.op: "like" is not one of`},
		{FilterConfig{Field: "a..b", Op: OpExists}, "filter.field: \"a..b\" has an empty path segment"},
		{FilterConfig{Field: "a", Op: OpExists, Value: 1}, "filter.value: exists takes no value"},
		{FilterConfig{Field: "a", Op: OpEq, Values: []any{1}}, "filter.values: only op in takes values"},
		{FilterConfig{Field: "a", Op: OpEq, Value: []int{1}}, "filter.value: must be a string, number, bool or null, got []int"},
		{FilterConfig{Field: "a", Op: OpGt, Value: true}, "filter.value: gt needs a number or a string, got bool"},
		{FilterConfig{Field: "a", Op: OpGt, Value: json.Number("x")}, `filter.value: "x" is not a number`},
		{FilterConfig{Field: "a", Op: OpIn}, "filter.values: op in needs a non-empty list"},
		{FilterConfig{Field: "a", Op: OpIn, Value: 1}, "filter.value: op in takes a list (values), got int"},
		{FilterConfig{Field: "a", Op: OpIn, Values: []any{1, struct{}{}}}, "filter.values[1]: must be"},
		{FilterConfig{Field: "a", Op: OpIn, Value: []any{map[string]any{}}}, "filter.value[0]: must be"},
		{FilterConfig{Field: "a", Op: OpEq, All: []FilterConfig{{}}}, "filter: a condition is either field/op or all/any"},
		{FilterConfig{All: []FilterConfig{}, Any: []FilterConfig{}}, "filter: a condition is all or any, not both"},
		{FilterConfig{Any: []FilterConfig{}}, "filter.any: is empty"},
		{FilterConfig{All: []FilterConfig{{Field: "a", Op: OpExists}, {Field: "b"}}}, "filter.all[1].op: is required"},
		{FilterConfig{}, "filter.field: is required"},
	}
	for _, tc := range cases {
		_, err := NewFilter(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewFilter(%+v) = %v, want ErrInvalidConfig containing %q", tc.cfg, err, tc.want)
		}
	}
	for _, v := range []any{int8(1), int16(1), int32(1), uint(1), uint16(1), uint32(1), uint64(1)} {
		if _, err := NewFilter(FilterConfig{Field: "a", Op: OpEq, Value: v}); err != nil {
			t.Errorf("value %T: %v", v, err)
		}
	}
}
