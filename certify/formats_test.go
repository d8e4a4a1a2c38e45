package certify

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// TestLikeInFormatKeepsFormats: a drawn base64 document is base64 of as
// many bytes with its magic number kept, a card number keeps a valid Luhn
// digit and an IBAN valid check digits, each drawn anew.
func TestLikeInFormatKeepsFormats(t *testing.T) {
	d := newDrawn(&connectorspec.Spec{}, &httpfixture.Manifest{}, 7, time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	pdf := base64.StdEncoding.EncodeToString([]byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF"))
	got := d.likeInFormat(pdf, true)
	raw, err := base64.StdEncoding.DecodeString(got)
	if err != nil || got == pdf || !strings.HasPrefix(string(raw), "%PDF-1.7") || len(got) != len(pdf) {
		t.Errorf("a base64 PDF drew %q (%v)", raw, err)
	}
	bin := base64.URLEncoding.EncodeToString([]byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4, 5, 6, 7, 8})
	if raw, err := base64.URLEncoding.DecodeString(d.likeInFormat(bin, true)); err != nil || string(raw[:4]) != "\x89PNG" || len(raw) != 16 {
		t.Errorf("a base64 PNG drew %x (%v)", raw, err)
	}
	card := "4242424242424242"
	if v := d.likeInFormat(card, true); v == card || !luhnValid(v) {
		t.Errorf("a card number drew %q", v)
	}
	iban := "DE89370400440532013000"
	if !ibanValid(iban) {
		t.Fatal("the example IBAN is not valid")
	}
	if v := d.likeInFormat(iban, true); v == iban || !ibanValid(v) || !strings.HasPrefix(v, "DE") {
		t.Errorf("an IBAN drew %q", v)
	}
	if v := d.likeInFormat("ada@corp.example", false); !strings.HasSuffix(v, "@corp.example") || v == "ada@corp.example" {
		t.Errorf("an email drew %q", v)
	}
}
