package pathtmpl

import "time"

// NewExpander returns an expander of t for one writer.
func (t *Template) NewExpander() *Expander {
	e := &Expander{t: t, times: make([][]byte, len(t.parts))}
	if t.unit == unitNone {
		e.setTime(time.Time{}) // caches the whole text of a template of literals only
	} else {
		e.lo, e.hi = 1, 0 // no time bucket cached
	}
	return e
}

// Expander expands a template for one writer's records. It caches the
// text of the last record time bucket (the hour for {HH}, the minute with
// mm), so time formatting happens once per bucket, not per record. Not
// safe for concurrent use.
type Expander struct {
	t      *Template
	lo, hi int64    // the cached time bucket: [lo, hi) in Unix seconds
	times  [][]byte // by part: the text of the time parts in the cached bucket
	whole  []byte   // a template without fields: its whole text in the cached bucket
	out    []byte
	str    []byte // scratch: an escaped JSON string unescaped
}

// Expand returns the bucket of a record with timestamp ts and value v.
// The bytes are valid until the next call (copy them to keep them).
func (e *Expander) Expand(ts time.Time, v []byte) []byte {
	if sec := ts.Unix(); e.t.unit != unitNone && (sec < e.lo || sec >= e.hi) {
		e.setTime(ts.UTC())
	}
	if e.whole != nil {
		return e.whole
	}
	out := e.out[:0]
	for i, p := range e.t.parts {
		switch p.kind {
		case partLiteral:
			out = append(out, p.text...)
		case partTime:
			out = append(out, e.times[i]...)
		case partField:
			out = e.appendField(out, v, p.path)
		}
	}
	e.out = out
	return out
}

// setTime formats the time parts for the bucket of ts and caches it.
func (e *Expander) setTime(ts time.Time) {
	var lo, hi time.Time
	y, m, d := ts.Date()
	switch e.t.unit {
	case unitMinute:
		lo = time.Date(y, m, d, ts.Hour(), ts.Minute(), 0, 0, time.UTC)
		hi = lo.Add(time.Minute)
	case unitHour:
		lo = time.Date(y, m, d, ts.Hour(), 0, 0, 0, time.UTC)
		hi = lo.Add(time.Hour)
	case unitDay:
		lo = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		hi = lo.AddDate(0, 0, 1)
	case unitMonth:
		lo = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		hi = lo.AddDate(0, 1, 0)
	case unitYear:
		lo = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		hi = lo.AddDate(1, 0, 0)
	}
	e.lo, e.hi = lo.Unix(), hi.Unix()
	fields := false
	for i, p := range e.t.parts {
		switch p.kind {
		case partTime:
			b := e.times[i][:0]
			for _, k := range p.time {
				switch k.unit {
				case unitNone:
					b = append(b, k.sep)
				case unitYear:
					b = appendPadded(b, y, 4)
				case unitMonth:
					b = appendPadded(b, int(m), 2)
				case unitDay:
					b = appendPadded(b, d, 2)
				case unitHour:
					b = appendPadded(b, ts.Hour(), 2)
				case unitMinute:
					b = appendPadded(b, ts.Minute(), 2)
				}
			}
			e.times[i] = b
		case partField:
			fields = true
		}
	}
	if fields {
		return
	}
	w := e.whole[:0]
	for i, p := range e.t.parts {
		if p.kind == partLiteral {
			w = append(w, p.text...)
		} else {
			w = append(w, e.times[i]...)
		}
	}
	e.whole = w
}

// appendPadded appends n in decimal with at least width digits (a year
// before 0 is written as 0000: no '-' ever reaches a path from a time).
func appendPadded(b []byte, n, width int) []byte {
	n = max(n, 0)
	var digits [20]byte
	i := len(digits)
	for n > 0 || i == len(digits) {
		i--
		digits[i] = byte('0' + n%10)
		n /= 10
	}
	for range width - (len(digits) - i) {
		b = append(b, '0')
	}
	return append(b, digits[i:]...)
}
