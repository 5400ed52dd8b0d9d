// Package roman converts between integers and Roman numerals.
package roman

import (
	"fmt"
	"strings"
)

// ErrRange is returned by Format for numbers Roman numerals cannot write.
var ErrRange = fmt.Errorf("roman: only 1 to 3999 can be written")

// symbols, largest first, with the subtractive pairs (CM, XL, IV...) among them.
var symbols = []struct {
	value int
	text  string
}{
	{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"},
	{100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"},
	{10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"},
}

// Format writes n in Roman numerals: 1994 is "MCMXCIV".
func Format(n int) (string, error) {
	if n < 1 || n > 3999 {
		return "", fmt.Errorf("%w: %d", ErrRange, n)
	}
	var b strings.Builder
	for _, s := range symbols {
		for n >= s.value {
			b.WriteString(s.text)
			n -= s.value
		}
	}
	return b.String(), nil
}

// letters are the values of the single numerals.
var letters = map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}

// Parse reads a Roman numeral such as "MCMXCIV" (1994), in upper or lower case.
func Parse(text string) (int, error) {
	text = strings.ToUpper(text)
	if text == "" {
		return 0, fmt.Errorf("roman: empty numeral")
	}
	total := 0
	for i := 0; i < len(text); i++ {
		value, ok := letters[text[i]]
		if !ok {
			return 0, fmt.Errorf("roman: %q is not a numeral in %q", text[i], text)
		}
		// A numeral before a larger one is subtracted: the I of IV, the C of CM.
		if i+1 < len(text) && letters[text[i+1]] > value {
			total -= value
		} else {
			total += value
		}
	}
	return total, nil
}
