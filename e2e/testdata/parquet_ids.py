"""Reads each Parquet file named on the command line with pyarrow and prints
one JSON object per file: {"file", "ids"} with the values of its id column,
or {"file", "error"} if pyarrow cannot read it. Run by the e2e tests'
parquet output reader through scripts/pyarrow: a reader independent of the
connector's Parquet writer."""

import json
import sys

import pyarrow.parquet as pq

for path in sys.argv[1:]:
    try:
        table = pq.read_table(path, columns=["id"])
        print(json.dumps({"file": path, "ids": table.column("id").to_pylist()}))
    except Exception as e:  # noqa: BLE001 - any failure is a bad file
        print(json.dumps({"file": path, "error": f"{type(e).__name__}: {e}"}))
