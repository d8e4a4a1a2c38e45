package flowir_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/flowir"
)

func TestCheckInput(t *testing.T) {
	t.Parallel()
	g, diags := flowir.NewLoader().LoadFlow("../examples/flows/order-fulfilment.yaml")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := g.Entries(); len(got) != 1 || got[0].Alias != "normalize" {
		t.Fatalf("entries: %v", got)
	}
	good := `{"order_id":"o-1","customer_id":"c","email":"a@b.c","items":[{"sku":"s","qty":1}],"total_cents":10,"currency":"eur","payment_method":"card"}`
	if err := g.CheckInput("in.json", []byte(good)); err != nil {
		t.Fatalf("good input refused: %v", err)
	}
	cases := []struct {
		name, input string
		want        []string // each a problem's String(), in order
	}{
		{"syntax error", "{\n  \"order_id\": \"o-1\",\n  \"email\" \"x\"\n}", []string{`in.json:3:11: $: JSON syntax: invalid character '"' after object key`}},
		{"ends early", "{\"order_id\":", []string{"in.json:1:13: $: JSON ends early"}},
		{"trailing data", "{}\n {}", []string{"in.json:2:2: $: unexpected data after the JSON value"}},
		{"empty", " \n", []string{"in.json:1:1: $: empty input: want a JSON value"}},
		{"every violation with its path", `{"order_id":"","customer_id":"c","email":"a@b.c",
 "items":[{"sku":"s","qty":0},{"qty":1}],"total_cents":-1,"currency":"eur","payment_method":"cash"}`, []string{
			`in.json:1:13: $.order_id: minLength: got 0, want 1 (input of normalize)`,
			`in.json:2:28: $.items[0].qty: minimum: got 0, want 1 (input of normalize)`,
			`in.json:2:32: $.items[1]: missing property 'sku' (input of normalize)`,
			`in.json:2:56: $.total_cents: minimum: got -1, want 0 (input of normalize)`,
			`in.json:2:93: $.payment_method: value must be one of 'card', 'invoice', 'manual' (input of normalize)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := g.CheckInput("in.json", []byte(c.input))
			var ie *flowir.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("want an InputError, got %v", err)
			}
			var got []string
			for _, p := range ie.Problems {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
