package cfgkey

import (
	"errors"
	"fmt"
	"testing"
)

var errClass = errors.New("invalid sink config")

// TestWrapKeepsTheTextAndTheClassAndOfFindsTheKeyThroughWrapping: the key
// adds nothing to the message, hides no class from errors.Is, and is
// found under further context.
func TestWrapKeepsTheTextAndTheClassAndOfFindsTheKeyThroughWrapping(t *testing.T) {
	inner := fmt.Errorf("%w: sink.bucket: bucket %q does not exist", errClass, "b")
	err := fmt.Errorf("sink: %w", Wrap("sink.bucket", inner))
	if got, want := err.Error(), "sink: "+inner.Error(); got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !errors.Is(err, errClass) {
		t.Errorf("errors.Is(%v, class) = false", err)
	}
	if key, ok := Of(err); !ok || key != "sink.bucket" {
		t.Errorf("Of = %q, %v; want sink.bucket, true", key, ok)
	}
}

// TestOfWithoutAKey: an error with no key, and nil, have none; Wrap of
// nil or with no key adds none.
func TestOfWithoutAKey(t *testing.T) {
	for _, err := range []error{nil, errClass, Wrap("", errClass), fmt.Errorf("x: %w", errClass)} {
		if key, ok := Of(err); ok || key != "" {
			t.Errorf("Of(%v) = %q, %v; want none", err, key, ok)
		}
	}
	if Wrap("sink.table", nil) != nil {
		t.Error("Wrap of nil is not nil")
	}
}

// TestOfFindsTheOutermostKey: a caller that knows a more precise key
// than the error it wraps names it.
func TestOfFindsTheOutermostKey(t *testing.T) {
	err := Wrap("sink.tls.ca_file", fmt.Errorf("ctx: %w", Wrap("kafka.tls.ca_file", errClass)))
	if key, _ := Of(err); key != "sink.tls.ca_file" {
		t.Errorf("Of = %q, want the outer sink.tls.ca_file", key)
	}
}
