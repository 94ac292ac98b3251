package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsError is a problem with one tls key.
type tlsError struct {
	key, msg string
}

func (e *tlsError) Error() string { return "kafka." + e.key + ": " + e.msg }

// Config builds the client's TLS settings: the CA file's roots (else the
// system's), the client certificate, the server name, and TLS 1.2 at
// least. An error names the key (*tlsError).
func (t *TLS) Config() (*tls.Config, *tlsError) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // insecure_skip_verify is the user's explicit, logged choice
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &tlsError{"tls.ca_file", err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &tlsError{"tls.ca_file", fmt.Sprintf("%s holds no PEM certificate", t.CAFile)}
		}
		c.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &tlsError{"tls.cert_file", fmt.Sprintf("with key_file %s: %v", t.KeyFile, err)}
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "":
		return nil, &tlsError{"tls.key_file", "is required with cert_file"}
	case t.KeyFile != "":
		return nil, &tlsError{"tls.cert_file", "is required with key_file"}
	}
	return c, nil
}
