package config

import (
	"fmt"
	"net"
	"strconv"

	"github.com/connector-dev/connector/config/secret"
)

// maxNameLen keeps names that go into file names (sink output, state
// directories) well under the usual 255-byte limit of a file name. The file
// sink enforces the same rule (sink/file: validJob); a test checks that
// they agree.
const maxNameLen = 100

// nameProblem says what is wrong with a job name, or "": 1 to 100
// letters, digits, '.', '_' and '-', starting with a letter or a digit (so
// that no name is hidden, "." or "..").
func nameProblem(n string) string {
	switch {
	case n == "":
		return "is required"
	case !onlyNameChars(n):
		return fmt.Sprintf("%q may only contain letters, digits, '.', '_' and '-'", n)
	case !isAlnum(n[0]):
		return fmt.Sprintf("%q must start with a letter or a digit", n)
	case len(n) > maxNameLen:
		return fmt.Sprintf("is longer than %d characters", maxNameLen)
	}
	return ""
}

// maxTopicLen is Kafka's limit on a topic name.
const maxTopicLen = 249

// TopicProblem says why name is not a valid Kafka topic name, or "" if it
// is one: Kafka takes 1 to 249 letters, digits, '.', '_' and '-', except
// "." and "..". A broker refuses any other name, so a kind checks its
// topics with it at validation rather than fail at run.
func TopicProblem(name string) string {
	switch {
	case name == "":
		return "empty topic name"
	case name == "." || name == "..":
		return fmt.Sprintf("%q is not a Kafka topic name", name)
	case !onlyNameChars(name):
		return fmt.Sprintf("%q is not a Kafka topic name: only letters, digits, '.', '_' and '-'", name)
	case len(name) > maxTopicLen:
		return fmt.Sprintf("a Kafka topic name has at most %d characters, this one %d", maxTopicLen, len(name))
	}
	return ""
}

// addrProblem says why addr is not "host:port" with a numeric port of at
// least minPort, or "". A service name ("localhost:http") is refused: it
// depends on the machine's /etc/services.
func addrProblem(addr string, minPort int) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", secret.RedactURL(addr))
	}
	if n, err := strconv.Atoi(port); err != nil || n < minPort || n > 65535 || !allDigits(port) {
		return fmt.Sprintf("port %q of %q is not a number from %d to 65535", secret.RedactURL(port), secret.RedactURL(addr), minPort)
	}
	return ""
}

func onlyNameChars(s string) bool {
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
