// Package prefix measures how long two byte strings begin alike: where the
// state changelog and Parquet's delta-encoded byte arrays store only what
// follows the previous entry's beginning.
package prefix
