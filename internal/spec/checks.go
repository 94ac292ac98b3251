package spec

// Small checks shared by the components' Validate methods, each naming the
// key and the offending value in the same words everywhere.

// Required reports key if s is empty.
func (p *Problems) Required(key, s string) {
	if s == "" {
		p.Add(key, "is required")
	}
}

// AtLeast reports key if n < low.
func (p *Problems) AtLeast(key string, n, low int) {
	if n < low {
		p.Add(key, "must be at least %d, got %d", low, n)
	}
}

// Between reports key if n is outside [low, high].
func (p *Problems) Between(key string, n, low, high int) {
	if n < low || n > high {
		p.Add(key, "must be between %d and %d, got %d", low, high, n)
	}
}

// Positive reports key if v <= 0 (durations, byte sizes, counts).
func Positive[T ~int64 | ~int](p *Problems, key string, v T) {
	if v <= 0 {
		p.Add(key, "must be positive, got %v", v)
	}
}

// NotNegative reports key if v < 0.
func NotNegative[T ~int64 | ~int](p *Problems, key string, v T) {
	if v < 0 {
		p.Add(key, "must not be negative, got %v", v)
	}
}

// AtMost reports key if v > high.
func AtMost[T ~int64 | ~int](p *Problems, key string, v, high T) {
	if v > high {
		p.Add(key, "must be at most %v, got %v", high, v)
	}
}

// OneOf reports key if v is none of allowed: `unknown mode "x" (want a or b)`.
func OneOf[T ~string](p *Problems, key, what string, v T, allowed ...T) {
	words := make([]string, len(allowed))
	for i, a := range allowed {
		if a == v {
			return
		}
		words[i] = string(a)
	}
	p.Add(key, "unknown %s %q (want %s)", what, v, OrList(words))
}

// OrList writes "a, b or c".
func OrList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	out := words[0]
	for _, w := range words[1 : len(words)-1] {
		out += ", " + w
	}
	return out + " or " + words[len(words)-1]
}
