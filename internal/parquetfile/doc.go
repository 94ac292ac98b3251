// Package parquetfile writes one Parquet file that may span many checkpoints
// of a streaming job and survive a crash between any two of them.
//
// It owns the bytes of the file and the small State that lets a new process
// continue it: the conversion of JSON record values into rows of a
// configured Schema, the encoding of row groups, and the footer. It does
// not own the file itself: it never opens, writes, syncs, truncates or
// renames anything, and it decides nothing about when to flush or roll. The caller (a sink) does, in this order:
//
//  1. NewWriter for a new file, or Resume with the State of the last
//     completed checkpoint after truncating the file to State.Size.
//  2. Append each record value; a value that does not fit the Schema returns
//     an error wrapping ErrBadRecord and leaves the Writer as it was.
//  3. FlushRowGroup when Buffered is large enough, and always before a
//     checkpoint; append the returned bytes to the file.
//  4. At a checkpoint, once the bytes are durable, store State in the
//     checkpoint metadata.
//  5. To roll: FlushRowGroup, append, then append Footer. The file is then
//     complete and the Writer is done.
//
// The package encodes the pages itself (column.go, dict.go, page.go), with
// parquet-go's encoders, codecs and thrift, as that is cheaper per record
// than building rows of parquet.Value for parquet-go's writer: JSON values
// go from the scan straight into the buffers of their column's page, and a
// row group is its columns' pages one after the other, placed where it
// goes in the file, with its metadata (thrift compact encoded) kept for the
// footer and the State. parquet-go turns the schema into the footer's form.
// The files have no page indexes, and the statistics of a column chunk have
// no min or max longer than 64 bytes: both would otherwise grow the State.
//
// A Writer is not safe for concurrent use.
package parquetfile
