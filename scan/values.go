package scan

import (
	"math/big"
	"strings"
)

// Decimal is an exact decimal number: Unscaled() × 10^-Scale(). Values that
// fit in an int64 unscaled are kept without a big.Int. The zero value is 0.
type Decimal struct {
	small int64
	big   *big.Int // non-nil when the unscaled value does not fit in int64
	scale int32
}

// NewDecimal returns unscaled × 10^-scale. unscaled is copied.
func NewDecimal(unscaled *big.Int, scale int) Decimal {
	if unscaled.IsInt64() {
		return Decimal{small: unscaled.Int64(), scale: int32(scale)}
	}
	return Decimal{big: new(big.Int).Set(unscaled), scale: int32(scale)}
}

// DecimalFromInt64 returns unscaled × 10^-scale.
func DecimalFromInt64(unscaled int64, scale int) Decimal {
	return Decimal{small: unscaled, scale: int32(scale)}
}

// Scale is the number of digits after the decimal point.
func (d Decimal) Scale() int { return int(d.scale) }

// Unscaled returns the unscaled value (a new big.Int).
func (d Decimal) Unscaled() *big.Int {
	if d.big != nil {
		return new(big.Int).Set(d.big)
	}
	return big.NewInt(d.small)
}

// Rat returns the value as an exact rational.
func (d Decimal) Rat() *big.Rat {
	r := new(big.Rat).SetInt(d.Unscaled())
	return r.Quo(r, new(big.Rat).SetInt(pow10(int(d.scale))))
}

// Rescale returns the same value with a larger scale (more trailing zeros).
// It returns d unchanged when scale <= d.Scale().
func (d Decimal) Rescale(scale int) Decimal {
	k := scale - int(d.scale)
	if k <= 0 {
		return d
	}
	if d.big == nil && k < len(pow10s) {
		m := pow10s[k]
		if p := d.small * m; p/m == d.small {
			return Decimal{small: p, scale: int32(scale)}
		}
	}
	u := d.Unscaled()
	return NewDecimal(u.Mul(u, pow10(k)), scale)
}

// String is the exact value with Scale() digits after the point, for
// example "123.45", "-0.05" or "7" for scale 0.
func (d Decimal) String() string {
	return string(d.appendText(nil))
}

// MarshalJSON writes the decimal as a JSON number, exactly.
func (d Decimal) MarshalJSON() ([]byte, error) { return d.appendText(nil), nil }

// MarshalText writes the decimal as String does.
func (d Decimal) MarshalText() ([]byte, error) { return d.appendText(nil), nil }

func (d Decimal) appendText(b []byte) []byte {
	var digits string
	if d.big != nil {
		digits = d.big.String()
	} else {
		digits = big.NewInt(d.small).String()
	}
	neg := strings.HasPrefix(digits, "-")
	if neg {
		digits = digits[1:]
		b = append(b, '-')
	}
	s := int(d.scale)
	if s <= 0 {
		b = append(b, digits...)
		for range -s {
			b = append(b, '0')
		}
		return b
	}
	if len(digits) <= s {
		b = append(b, '0', '.')
		for range s - len(digits) {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[:len(digits)-s]...)
	b = append(b, '.')
	return append(b, digits[len(digits)-s:]...)
}

var pow10s = func() []int64 {
	p := make([]int64, 19)
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

func pow10(k int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// Struct is the value of a struct: its fields' values in schema order.
// Names is shared by every value of the same field and must not be
// modified.
type Struct struct {
	Names  []string
	Values []any
}

// Get returns the value of the field with the given (logical) name, and
// whether the struct has that field.
func (s Struct) Get(name string) (any, bool) {
	for i, n := range s.Names {
		if n == name {
			return s.Values[i], true
		}
	}
	return nil, false
}

// Map is the value of a map: its entries in file order.
type Map []MapEntry

// MapEntry is one key and value of a Map.
type MapEntry struct {
	Key, Value any
}
