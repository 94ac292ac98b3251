"""Reads each Parquet file named on the command line with pyarrow and prints
one JSON object per file: its row and row group counts, the codec of each
column chunk, the Arrow schema, and every value (timestamps and dates as
integers in their unit, binary as base64). Run by pyarrow_test.go through
scripts/pyarrow."""

import base64
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def plain(col):
    """The column's values as JSON-able Python values."""
    if isinstance(col.type, pa.ExtensionType):  # arrow.json
        col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
    t = col.type
    if pa.types.is_timestamp(t):
        col = col.cast(pa.int64())
    elif pa.types.is_date32(t):
        col = col.cast(pa.int32())
    values = col.to_pylist()
    if pa.types.is_binary(t):
        values = [None if v is None else base64.b64encode(v).decode() for v in values]
    return values


for path in sys.argv[1:]:
    f = pq.ParquetFile(path)
    md = f.metadata
    table = f.read()
    print(json.dumps({
        "file": path,
        "rows": table.num_rows,
        "metadata_rows": md.num_rows,
        "row_groups": md.num_row_groups,
        "codecs": sorted({md.row_group(i).column(j).compression
                          for i in range(md.num_row_groups) for j in range(md.num_columns)}),
        "schema": [[fld.name, str(fld.type), fld.nullable] for fld in table.schema],
        "columns": {name: plain(table.column(name)) for name in table.column_names},
    }))
