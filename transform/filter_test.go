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
		cfg  Condition
		want bool
	}{
		{"eq string", Condition{Field: "id", Op: OpEq, Value: "o-1"}, true},
		{"eq string other", Condition{Field: "id", Op: OpEq, Value: "o-2"}, false},
		{"eq string with escape", Condition{Field: "status", Op: OpEq, Value: "paid"}, true},
		{"eq number int config", Condition{Field: "qty", Op: OpEq, Value: 3}, true},
		{"eq number float", Condition{Field: "amount", Op: OpEq, Value: 12.5}, true},
		{"eq number json.Number", Condition{Field: "amount", Op: OpEq, Value: json.Number("12.50")}, true},
		{"eq number vs string is false", Condition{Field: "qty", Op: OpEq, Value: "3"}, false},
		{"eq bool", Condition{Field: "paid", Op: OpEq, Value: true}, true},
		{"eq bool false", Condition{Field: "paid", Op: OpEq, Value: false}, false},
		{"eq null", Condition{Field: "note", Op: OpEq, Value: nil}, true},
		{"eq null vs string", Condition{Field: "id", Op: OpEq, Value: nil}, false},
		{"eq object is false", Condition{Field: "customer", Op: OpEq, Value: "x"}, false},
		{"ne", Condition{Field: "id", Op: OpNe, Value: "o-2"}, true},
		{"ne same", Condition{Field: "id", Op: OpNe, Value: "o-1"}, false},
		{"ne other type", Condition{Field: "qty", Op: OpNe, Value: "3"}, true},
		{"ne missing is false", Condition{Field: "nope", Op: OpNe, Value: "x"}, false},
		{"gt", Condition{Field: "amount", Op: OpGt, Value: 12}, true},
		{"gt equal", Condition{Field: "amount", Op: OpGt, Value: 12.5}, false},
		{"gte equal", Condition{Field: "amount", Op: OpGte, Value: 12.5}, true},
		{"lt", Condition{Field: "qty", Op: OpLt, Value: int64(4)}, true},
		{"lt false", Condition{Field: "qty", Op: OpLt, Value: uint8(3)}, false},
		{"lte equal", Condition{Field: "qty", Op: OpLte, Value: float32(3)}, true},
		{"gt huge number", Condition{Field: "big", Op: OpGt, Value: 1e300}, true},
		{"gt string byte-wise", Condition{Field: "day", Op: OpGt, Value: "2026-01-01"}, true},
		{"lt string byte-wise", Condition{Field: "day", Op: OpLt, Value: "2026-01-01"}, false},
		{"lte escaped string", Condition{Field: "status", Op: OpLte, Value: "paid"}, true},
		{"gt string vs number is false", Condition{Field: "id", Op: OpGt, Value: 1}, false},
		{"gt bool is false", Condition{Field: "paid", Op: OpGt, Value: 0}, false},
		{"gt missing", Condition{Field: "nope", Op: OpGt, Value: 0}, false},
		{"exists", Condition{Field: "id", Op: OpExists}, true},
		{"exists null", Condition{Field: "note", Op: OpExists}, true},
		{"exists missing", Condition{Field: "nope", Op: OpExists}, false},
		{"not_exists missing", Condition{Field: "nope", Op: OpNotExists}, true},
		{"not_exists present", Condition{Field: "id", Op: OpNotExists}, false},
		{"not_exists nested missing", Condition{Field: "customer.nope", Op: OpNotExists}, true},
		{"in values", Condition{Field: "customer.tier", Op: OpIn, Values: []any{"silver", "gold"}}, true},
		{"in value list", Condition{Field: "qty", Op: OpIn, Value: []any{1, 2, 3}}, true},
		{"in none", Condition{Field: "qty", Op: OpIn, Values: []any{1, "3", true}}, false},
		{"in missing", Condition{Field: "nope", Op: OpIn, Values: []any{1}}, false},
		{"nested eq", Condition{Field: "customer.id", Op: OpEq, Value: 7}, true},
		{"deeply nested", Condition{Field: "customer.addr.city", Op: OpEq, Value: "Lyon"}, true},
		{"path through non-object", Condition{Field: "id.x", Op: OpExists}, false},
		{"path through array", Condition{Field: "tags.0", Op: OpExists}, false},
		{"all true", Condition{All: []Condition{{Field: "paid", Op: OpEq, Value: true}, {Field: "qty", Op: OpGte, Value: 3}}}, true},
		{"all one false", Condition{All: []Condition{{Field: "paid", Op: OpEq, Value: true}, {Field: "qty", Op: OpGt, Value: 3}}}, false},
		{"any one true", Condition{Any: []Condition{{Field: "nope", Op: OpExists}, {Field: "qty", Op: OpEq, Value: 3}}}, true},
		{"any none", Condition{Any: []Condition{{Field: "nope", Op: OpExists}, {Field: "qty", Op: OpEq, Value: 4}}}, false},
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
	f, _ := NewFilter(Condition{Field: "a.b", Op: OpEq, Value: 2})
	if !mustApply(t, f, rec(`{"a":{"b":1,"b":2},"a":{"b":1,"b":2}}`)) {
		t.Error("want the last duplicate key to count")
	}
	g, _ := NewFilter(Condition{Field: "k", Op: OpEq, Value: 2})
	if !mustApply(t, g, rec(`{"k":1,"\u006b":2}`)) {
		t.Error("escaped key should match its decoded name")
	}
	h, _ := NewFilter(Condition{Field: "o.k", Op: OpEq, Value: 2})
	if !mustApply(t, h, rec(`{"o":{"\u006b":2}}`)) {
		t.Error("escaped nested key should match its decoded name")
	}
}

func TestConditionErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		cfg  Condition
		want string
	}{
		{Condition{Op: OpEq, Value: 1}, "filter.condition.field: is required"},
		{Condition{Field: "a"}, "filter.condition.op: is required"},
		{Condition{Field: "a", Op: "like"}, `filter.condition.op: "like" is not one of`},
		{Condition{Field: "a..b", Op: OpExists}, "filter.condition.field: \"a..b\" has an empty path segment"},
		{Condition{Field: "a", Op: OpExists, Value: 1}, "filter.condition.value: exists takes no value"},
		{Condition{Field: "a", Op: OpEq, Values: []any{1}}, "filter.condition.values: only op in takes values"},
		{Condition{Field: "a", Op: OpEq, Value: []int{1}}, "filter.condition.value: must be a string, number, bool or null, got []int"},
		{Condition{Field: "a", Op: OpGt, Value: true}, "filter.condition.value: gt needs a number or a string, got bool"},
		{Condition{Field: "a", Op: OpGt, Value: json.Number("x")}, `filter.condition.value: "x" is not a number`},
		{Condition{Field: "a", Op: OpIn}, "filter.condition.values: op in needs a non-empty list"},
		{Condition{Field: "a", Op: OpIn, Value: 1}, "filter.condition.value: op in takes a list (values), got int"},
		{Condition{Field: "a", Op: OpIn, Values: []any{1, struct{}{}}}, "filter.condition.values[1]: must be"},
		{Condition{Field: "a", Op: OpIn, Value: []any{map[string]any{}}}, "filter.condition.value[0]: must be"},
		{Condition{Field: "a", Op: OpEq, All: []Condition{{}}}, "filter.condition: a condition is either field/op or all/any"},
		{Condition{All: []Condition{}, Any: []Condition{}}, "filter.condition: a condition is all or any, not both"},
		{Condition{Any: []Condition{}}, "filter.condition.any: is empty"},
		{Condition{All: []Condition{{Field: "a", Op: OpExists}, {Field: "b"}}}, "filter.condition.all[1].op: is required"},
		{Condition{}, "filter.condition.field: is required"},
	}
	for _, tc := range cases {
		_, err := NewFilter(tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewFilter(%+v) = %v, want ErrInvalidConfig containing %q", tc.cfg, err, tc.want)
		}
	}
	for _, v := range []any{int8(1), int16(1), int32(1), uint(1), uint16(1), uint32(1), uint64(1)} {
		if _, err := NewFilter(Condition{Field: "a", Op: OpEq, Value: v}); err != nil {
			t.Errorf("value %T: %v", v, err)
		}
	}
}
