// Package s3test hands tests a real S3-compatible server and fresh buckets.
//
// It owns the choice of server for a test run and nothing else:
//
//   - S3_ENDPOINT (http://host:port), S3_ACCESS_KEY, S3_SECRET_KEY and
//     S3_REGION name the server. scripts/test starts a throwaway Versity S3
//     Gateway (versitygw, posix backend) with scripts/s3 and exports them; by
//     hand: eval "$(scripts/s3 start)"; export S3_ENDPOINT S3_ACCESS_KEY
//     S3_SECRET_KEY S3_REGION.
//   - Without S3_ENDPOINT every test that asks for the server fails; it never
//     skips, and there is no in-process fallback (as in internal/pgtest).
//
// Every bucket made by [Bucket] has a unique name, starts empty and is
// removed, with its objects and unfinished multipart uploads, when the test
// ends. Clients are minio-go (github.com/minio/minio-go/v7), path-style.
package s3test
