package checkpoint

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt from what the code does now")

// A script is a testdata file of blocks separated by blank lines. Each block is
// one or more input lines, a line "----", and the expected output (no blank
// lines). Lines starting with '#' between blocks are comments. With -rewrite the
// expected output is replaced by the actual one.
type scriptBlock struct {
	line  int      // of the first input line, for messages
	input []string // the command line, then its argument lines
	want  []string
}

// runScript runs every block of file through do and compares (or rewrites).
func runScript(t *testing.T, file string, do func(t *testing.T, input []string) []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		b := scriptBlock{line: lineNo, input: []string{l}}
		for {
			l, ok = next()
			if !ok {
				t.Fatalf("%s:%d: block without ----", file, b.line)
			}
			if l == "----" {
				break
			}
			b.input = append(b.input, l)
		}
		for {
			l, ok = next()
			if !ok || strings.TrimSpace(l) == "" {
				break
			}
			b.want = append(b.want, l)
		}
		got := do(t, b.input)
		for _, g := range got {
			if strings.TrimSpace(g) == "" {
				t.Fatalf("%s:%d: output contains a blank line", file, b.line)
			}
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", file, b.line, strings.Join(b.input, "\n"),
				indent(got), indent(b.want))
		}
		out.WriteString(strings.Join(b.input, "\n") + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if ok {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return "  (nothing)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// scripts returns the testdata scripts whose names start with prefix.
func scripts(t *testing.T, prefix string) []string {
	files, err := filepath.Glob(filepath.Join("testdata", prefix+"*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/%s*.txt: %v", prefix, err)
	}
	return files
}
