// Package s3conn is how the connector reaches S3-compatible storage: the
// connection keys a config section shares (endpoint, region, path_style,
// access_key_id, secret_access_key), their checks, the minio-go client
// they describe, and the reading of S3 errors (codes, not found,
// transient).
//
// Two users embed Config in their section (yaml ",inline"): the s3 sink
// (sink:) and checkpoint storage on S3 (checkpoint.s3:). The package does
// not know buckets, keys or what is stored: each user owns its layout.
package s3conn
