package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads the job file at path and returns it decoded, interpolated from
// the process environment, defaulted and validated. Problems with the
// contents come back as Errors (one *Error per problem, naming path, line and
// key); a file that cannot be read comes back as the wrapped *fs.PathError.
func Load(path string) (*Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse is Load for data already in memory: file names it in errors; lookup
// resolves ${VAR} (nil means os.LookupEnv). It refuses, with one *Error
// and before decoding anything, a file larger than 1MiB and a document
// that, with its aliases expanded, nests deeper than 100 levels, holds
// more than 50,000 values or contains an alias inside the value it
// refers to (see limits.go); so it returns quickly whatever the input.
func Parse(file string, data []byte, lookup LookupEnv) (*Job, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	src := newOrigin(file)
	errs := newCollector(src)
	if len(data) > maxFileSize {
		errs.addAt(0, "", "the file is %d bytes; a job file may have at most %d", len(data), maxFileSize)
		return nil, errs.err()
	}
	src.lastLine = bytes.Count(data, []byte("\n")) + 1
	root, ok := parseYAML(data, errs)
	if !ok {
		return nil, errs.err()
	}
	if !measure(root, errs) {
		return nil, errs.err()
	}
	if resolveAlias(root).Kind != yaml.MappingNode {
		errs.addAt(root.Line, "", "expected a mapping of keys (name, kafka, source, ...) at the top, got %s", kindName(root))
		return nil, errs.err()
	}
	job := &Job{src: src}
	d := &decoder{src: src, errs: errs, lookup: lookup}
	d.mapping(root, "", reflect.ValueOf(job).Elem(), "")
	fillDefaults(job, src)
	validate(job, errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return job, nil
}

// parseYAML parses data, which must hold exactly one YAML document, and
// returns its top node. A second document ("---" and keys after it) is
// refused rather than dropped, as yaml.Unmarshal would: its keys would
// be silently ignored; an empty one (a trailing "---") drops nothing and
// is accepted. ok false: the problem is in errs.
func parseYAML(data []byte, errs *collector) (root *yaml.Node, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if err == nil && len(doc.Content) == 0 {
		err = io.EOF
	}
	switch {
	case errors.Is(err, io.EOF):
		errs.addAt(0, "", "the file is empty")
		return nil, false
	case err != nil:
		line, msg := splitYAMLError(err)
		errs.addAt(line, "", "%s", msg)
		return nil, false
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		line, msg := splitYAMLError(err)
		errs.addAt(line, "", "%s", msg)
		return nil, false
	case len(next.Content) > 0 && !isEmpty(next.Content[0]):
		errs.addAt(next.Line, "", "a second YAML document starts here (---); a job file holds one: move its keys into the first, or remove the ---")
		return nil, false
	}
	return doc.Content[0], true
}

// isEmpty reports whether n is nothing at all: no value, no tag, not quoted.
func isEmpty(n *yaml.Node) bool { return isNull(n) && n.Value == "" && n.Style == 0 }

// FillDefaults fills every zero field of a Job built in code with its
// default, as Load does for keys absent from the file.
func (j *Job) FillDefaults() {
	fillDefaults(j, nil)
}

// Validate checks a Job and returns Errors, or nil. Load has already called
// it; call it on a Job built in code (after FillDefaults). Errors name lines
// only for a Job that came from a file.
func (j *Job) Validate() error {
	errs := newCollector(j.src)
	validate(j, errs)
	return errs.err()
}

// File returns the file the Job was loaded from, or "".
func (j *Job) File() string { return j.src.file() }

// Line returns the line of key (a dotted path, "sink.bucket") in the file
// the Job was loaded from, or of its closest parent present there, else 1
// (as an Error names it); 0 for a Job built in code. It places a problem
// found after Load, when the job starts (a bucket that does not exist:
// cfgkey names the key), where validation would have.
func (j *Job) Line(key string) int { return j.src.problemLine(key) }

// Given reports whether the file gave key (a dotted path, "log.level") a
// value, as opposed to leaving it to its default; false for a Job built in
// code.
func (j *Job) Given(key string) bool { return j.src != nil && j.src.set[key] }

var yamlErrLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// zeroBasedYAMLErrors are the parser (not scanner) errors for which
// yaml.v3 reports the 0-based line of the enclosing mapping or list; the
// others carry 1-based lines. The bad-syntax rows of the tests pin this.
var zeroBasedYAMLErrors = map[string]bool{
	"did not find expected key":           true,
	"did not find expected '-' indicator": true,
	"did not find expected ',' or ']'":    true,
	"did not find expected ',' or '}'":    true,
	"did not find expected node content":  true,
}

// splitYAMLError turns "yaml: line 3: did not find ..." into (3, "invalid
// YAML: did not find ..."), with the line 1-based.
func splitYAMLError(err error) (int, string) {
	m := yamlErrLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
	}
	line, _ := strconv.Atoi(m[1])
	if zeroBasedYAMLErrors[m[2]] {
		line++
	}
	return line, "invalid YAML: " + m[2]
}
