package certs

import (
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Info describes one certificate of a certificates directory.
type Info struct {
	File       string   // the file's name in the directory
	CommonName string   // the subject's common name
	IsCA       bool     // a CA certificate
	Usages     []string // "server" and/or "client": the authentication it is for
	Hosts      []string // its DNS names, then its IP addresses
	NotBefore  time.Time
	NotAfter   time.Time
	Serial     string // hexadecimal
	Issuer     string // the issuer's common name
}

// List describes every certificate of every *.crt file in dir — one Info
// per certificate, so a CA bundle gives one per CA — sorted by file name and
// within a file in file order. A .crt file that holds no certificate, or
// one that does not parse, is an error: List is what an operator checks
// files with, so it does not skip what it cannot read.
func List(dir string) ([]Info, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("certs: listing certificates: %w", err)
	}
	var infos []Info
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".crt") {
			continue
		}
		certs, err := readCertificates(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, c := range certs {
			infos = append(infos, infoOf(e.Name(), c))
		}
	}
	// ReadDir sorts by name already; the sort states the contract.
	slices.SortStableFunc(infos, func(a, b Info) int { return strings.Compare(a.File, b.File) })
	return infos, nil
}

func infoOf(file string, c *x509.Certificate) Info {
	in := Info{
		File:       file,
		CommonName: c.Subject.CommonName,
		IsCA:       c.IsCA,
		NotBefore:  c.NotBefore,
		NotAfter:   c.NotAfter,
		Serial:     fmt.Sprintf("%x", c.SerialNumber),
		Issuer:     c.Issuer.CommonName,
	}
	// A CA without extended key usages is not "for any usage" in any sense an
	// operator means; its column says "ca".
	if !c.IsCA || len(c.ExtKeyUsage) > 0 {
		for _, u := range authUsages(c) {
			in.Usages = append(in.Usages, usageWord(u))
		}
	}
	in.Hosts = Hosts(c)
	return in
}

// Hosts lists what c is for: its DNS names, then its IP addresses.
func Hosts(c *x509.Certificate) []string {
	out := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// authUsages is what c may authenticate, of server and client: what its
// extended key usages say, and both when it has none (as crypto/x509
// treats a certificate without the extension).
func authUsages(c *x509.Certificate) []x509.ExtKeyUsage {
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return both
	}
	var out []x509.ExtKeyUsage
	for _, u := range both {
		if slices.Contains(c.ExtKeyUsage, u) || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny) {
			out = append(out, u)
		}
	}
	return out
}

func usageWord(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "server"
	}
	return "client"
}

// WriteList writes infos as a table with the columns FILE, NAME, USAGE,
// HOSTS and EXPIRES; the expiry is a date with how far away it is from now,
// or EXPIRED. The error is the writer's.
func WriteList(w io.Writer, infos []Info, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tNAME\tUSAGE\tHOSTS\tEXPIRES")
	for _, in := range infos {
		usage := in.Usages
		if in.IsCA {
			usage = append([]string{"ca"}, usage...)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n",
			cell(in.File), cell(in.CommonName), cell(strings.Join(usage, ",")), cell(strings.Join(in.Hosts, ",")), expires(in, now))
	}
	return tw.Flush()
}

// expires is "2031-05-04 (in 1825 days)", "... (in 5 hours)", "2020-01-02
// (EXPIRED)" or, for a
// certificate created with a clock ahead of this one, "... (NOT YET VALID)".
func expires(in Info, now time.Time) string {
	date := in.NotAfter.UTC().Format(time.DateOnly)
	switch {
	case !now.Before(in.NotAfter):
		return date + " (EXPIRED)"
	case now.Before(in.NotBefore):
		return date + " (NOT YET VALID)"
	}
	// Rounded down: a warning about expiry must not promise time there is not.
	left := in.NotAfter.Sub(now)
	switch days, hours := int(left/(24*time.Hour)), int(left/time.Hour); {
	case days > 1:
		return fmt.Sprintf("%s (in %d days)", date, days)
	case days == 1:
		return date + " (in 1 day)"
	case hours > 1:
		return fmt.Sprintf("%s (in %d hours)", date, hours)
	}
	return date + " (in less than 2 hours)"
}

// cell keeps a table cell on its line and in its column: names come from
// certificates, which anyone may have made, so control characters (a tab, a
// newline) are replaced; an empty cell is "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
