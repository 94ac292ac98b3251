// Package mincore tells which pages of a memory mapping are resident
// (Linux mincore(2); Pages is Linux's only): for tests of what a mapping or
// a file's page cache holds. It owns nothing else.
package mincore
