package recfmt

import (
	"bytes"
	"errors"
	"testing"

	"github.com/connector-dev/connector/sink"
)

func TestEncodeKeepsOneLineAndCompactsMultiLineJSON(t *testing.T) {
	var scratch bytes.Buffer
	for in, want := range map[string]string{
		`{"a":1}`:                `{"a":1}`,
		"{\n \"a\": [1,\n 2]\n}": `{"a":[1,2]}`,
		`not json but one line`:  `not json but one line`,
	} {
		got, err := Encode(JSONL, []byte(in), &scratch)
		if err != nil || string(got) != want {
			t.Errorf("Encode(jsonl, %q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestEncodeRefusesEmptyAndBrokenMultiLineJSONL(t *testing.T) {
	var scratch bytes.Buffer
	for _, in := range []string{"", "{\n\"a\":"} {
		if _, err := Encode(JSONL, []byte(in), &scratch); !errors.Is(err, sink.ErrBadRecord) {
			t.Errorf("Encode(jsonl, %q): %v, want ErrBadRecord", in, err)
		}
	}
}

func TestEncodeRawPassesBytesThrough(t *testing.T) {
	var scratch bytes.Buffer
	in := []byte("a\nb")
	got, err := Encode(Raw, in, &scratch)
	if err != nil || !bytes.Equal(got, in) || Separator(Raw) || !Separator(JSONL) {
		t.Errorf("Encode(raw) = %q, %v", got, err)
	}
}
