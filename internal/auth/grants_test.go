package auth

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A principal's role on an object is the highest of its own and what a
// grant to it or its groups gives on a namespace holding the object; a
// grant on "a" says nothing of "ab" or of a's parent.
func TestGrantsGiveRolesOnSubtrees(t *testing.T) {
	gs := Grants{
		{Namespace: []string{"a"}, Principal: "ana", Role: Read},
		{Namespace: []string{"a", "x"}, Group: "etl", Role: Write},
		{Namespace: []string{"a", "x", "y"}, Principal: "ana", Role: Admin},
		{Namespace: nil, Group: "all-readers", Role: Read},
	}
	ana := Principal{Name: "ana", Role: None}
	bo := Principal{Name: "bo", Role: None, Groups: []string{"etl"}}
	cases := []struct {
		p    Principal
		id   []string
		want Role
	}{
		{ana, []string{"a"}, Read},
		{ana, []string{"a", "t"}, Read},
		{ana, []string{"a", "x", "y", "t"}, Admin},
		{ana, []string{"ab"}, None},
		{ana, nil, None},
		{bo, []string{"a", "x", "t"}, Write},
		{bo, []string{"a", "t"}, None},
		{Principal{Name: "bo", Role: Admin}, []string{"b"}, Admin},
		{Principal{Name: "cy", Groups: []string{"all-readers"}}, []string{"z", "t"}, Read},
	}
	for _, c := range cases {
		if got := gs.RoleOn(c.p, c.id); got != c.want {
			t.Errorf("%s on %v: %s, want %s", c.p.Name, c.id, got, c.want)
		}
	}
	if all, trees := gs.Readable(ana); all || !reflect.DeepEqual(trees, [][]string{{"a"}}) {
		t.Errorf("ana reads %v %v", all, trees)
	}
	if all, _ := gs.Readable(Principal{Name: "cy", Groups: []string{"all-readers"}}); !all {
		t.Error("a grant on the root reads everything")
	}
	if !gs.Leads(bo, []string{"a"}) || !gs.Leads(bo, nil) || gs.Leads(bo, []string{"a", "x"}) || gs.Leads(bo, []string{"b"}) {
		t.Error("Leads")
	}
	// A role is its name in JSON; an unknown one is refused.
	b, _ := json.Marshal(gs[0])
	if string(b) != `{"namespace":["a"],"principal":"ana","role":"read"}` {
		t.Errorf("JSON %s", b)
	}
	var g Grant
	if err := json.Unmarshal([]byte(`{"namespace":["a"],"principal":"p","role":"root"}`), &g); err == nil {
		t.Error("an unknown role was read")
	}
	// The auth file takes role none and groups; an empty group is refused.
	a, err := New(Config{Tokens: []TokenEntry{{Token: "token-of-bo", Name: "bo", Role: "none", Groups: []string{"etl"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Bearer("token-of-bo"); err != nil || p.Role != None || !reflect.DeepEqual(p.Groups, []string{"etl"}) {
		t.Errorf("bo: %+v, %v", p, err)
	}
	if _, err := New(Config{Tokens: []TokenEntry{{Token: "token-of-bo", Name: "bo", Role: "read", Groups: []string{""}}}}); err == nil {
		t.Error("an empty group was taken")
	}
}
