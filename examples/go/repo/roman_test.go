package roman

import (
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	cases := map[int]string{1: "I", 4: "IV", 9: "IX", 14: "XIV", 40: "XL", 1994: "MCMXCIV", 3999: "MMMCMXCIX"}
	for n, want := range cases {
		got, err := Format(n)
		if err != nil || got != want {
			t.Errorf("Format(%d) = %q, %v; want %q", n, got, err, want)
		}
	}
}

func TestFormatOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, 4000} {
		if _, err := Format(n); !errors.Is(err, ErrRange) {
			t.Errorf("Format(%d) error = %v; want ErrRange", n, err)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		text string
		want int
	}{
		{"additive only", "XVI", 16},
		{"lower case", "mdclxvi", 1666},
		{"subtractive four", "IV", 4},
		{"subtractive in the middle", "XIV", 14},
		{"every subtractive pair", "MCMXCIV", 1994},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.text)
			if err != nil || got != c.want {
				t.Errorf("Parse(%q) = %d, %v; want %d", c.text, got, err, c.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, text := range []string{"", "ABC", "X V"} {
		if _, err := Parse(text); err == nil {
			t.Errorf("Parse(%q) succeeded; want an error", text)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for n := 1; n <= 3999; n++ {
		text, err := Format(n)
		if err != nil {
			t.Fatalf("Format(%d): %v", n, err)
		}
		if got, err := Parse(text); err != nil || got != n {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v", n, text, got, err)
		}
	}
}
