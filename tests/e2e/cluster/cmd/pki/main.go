// Command pki writes the keys the e2e control plane needs into one directory: the service account
// signing key pair kube-apiserver and kube-controller-manager require (sa.key, sa.pub), and a
// self-signed serving certificate for 127.0.0.1 (tls.crt, tls.key) that Kueue's webhook server
// presents and the API server trusts through the webhook configurations' caBundle.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

func writePEM(path, kind string, der []byte) {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		log.Fatalf("pki: %v", err)
	}
}

func main() {
	dir := flag.String("dir", "", "directory to write sa.key, sa.pub, tls.crt and tls.key into (required)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("pki: --dir is required")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		log.Fatalf("pki: %v", err)
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatalf("pki: %v", err)
	}
	writePEM(filepath.Join(*dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		log.Fatalf("pki: %v", err)
	}
	writePEM(filepath.Join(*dir, "sa.pub"), "PUBLIC KEY", pub)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatalf("pki: %v", err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "e2e-webhook"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		log.Fatalf("pki: %v", err)
	}
	writePEM(filepath.Join(*dir, "tls.crt"), "CERTIFICATE", der)
	writePEM(filepath.Join(*dir, "tls.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
}
