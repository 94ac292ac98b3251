package checkpoint

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultSettingsAreValid(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheYAMLKey(t *testing.T) {
	for key, change := range map[string]func(*Settings){
		"checkpoint.interval:":           func(s *Settings) { s.Interval = 0 },
		"checkpoint.initial_delay:":      func(s *Settings) { s.InitialDelay = -time.Second },
		"checkpoint.min_pause:":          func(s *Settings) { s.MinPause = -time.Second },
		"checkpoint.timeout:":            func(s *Settings) { s.Timeout = 0 },
		"checkpoint.max_concurrent:":     func(s *Settings) { s.MaxConcurrent = 0 },
		"checkpoint.tolerable_failures:": func(s *Settings) { s.TolerableFailures = -1 },
		"checkpoint.retained:":           func(s *Settings) { s.Retained = 0 },
		"checkpoint.mode:":               func(s *Settings) { s.Mode = 9 },
	} {
		s := DefaultSettings()
		change(&s)
		err := s.Validate()
		if !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: got %v", key, err)
		}
		if _, err := NewCoordinator(s, []TaskID{"a"}, nil, 0); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("%s: NewCoordinator accepted it: %v", key, err)
		}
	}
}

func TestModeRoundTripsThroughItsConfigSpelling(t *testing.T) {
	for _, m := range []Mode{ExactlyOnce, AtLeastOnce} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMode("exactly-once"); !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), "checkpoint.mode") {
		t.Errorf("ParseMode accepted a misspelling: %v", err)
	}
	if s := Mode(7).String(); s != "Mode(7)" {
		t.Errorf("unknown mode prints as %q", s)
	}
}

func TestAlignerSettingsValidate(t *testing.T) {
	for _, s := range []AlignerSettings{
		{Channels: 0},
		{Channels: 1, Mode: 5},
		{Channels: 1, MaxHeldBytes: -1},
	} {
		if _, err := NewAligner[int](s); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("%+v: got %v", s, err)
		}
	}
}

// TestReasonsCarryTheirClassAndCause checks that what Abort and FailJob carry
// can be told apart with errors.Is, cause included.
func TestReasonsCarryTheirClassAndCause(t *testing.T) {
	s := DefaultSettings()
	s.TolerableFailures = 1
	c, err := NewCoordinator(s, []TaskID{"a"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	steps := []Event{
		Tick{Now: t0},
		Decline{Task: "a", ID: 1, Reason: diskFull},
		Tick{Now: t0.Add(time.Second)},
		Ack{Task: "a", ID: 2},
		MetadataPersistFailed{ID: 2, Err: diskFull},
	}
	var acts []Action
	for _, ev := range steps {
		if err := c.Step(ev); err != nil {
			t.Fatal(err)
		}
		acts = append(acts, c.Actions()...)
	}
	want := []struct {
		action  string
		classes []error
	}{
		{"trigger", nil},
		{"abort 1", []error{ErrDeclined, diskFull}},
		{"trigger", nil},
		{"persist", nil},
		{"abort 2", []error{ErrPersistFailed, diskFull}},
		{"fail-job", []error{ErrTooManyFailures, ErrPersistFailed, diskFull}},
	}
	if len(acts) != len(want) {
		t.Fatalf("actions %v", acts)
	}
	for i, a := range acts {
		if !strings.HasPrefix(a.String(), want[i].action) {
			t.Errorf("action %d is %v, want %s", i, a, want[i].action)
		}
		var reason error
		switch a := a.(type) {
		case Abort:
			reason = a.Reason
		case FailJob:
			reason = a.Reason
		}
		for _, class := range want[i].classes {
			if !errors.Is(reason, class) {
				t.Errorf("%v: reason does not wrap %v", a, class)
			}
		}
	}
	if st := c.Status(); st.Failed == nil || !errors.Is(st.Failed, ErrTooManyFailures) {
		t.Errorf("status after FailJob: %+v", st)
	}
}
