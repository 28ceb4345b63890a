package importer

import (
	"fmt"
	"strconv"
	"strings"
)

// parsePyLiteral parses the Python literal of a .npy header: dicts, lists,
// tuples, strings, integers, True, False and None. Dicts come back as
// map[string]any (keys must be strings), lists and tuples as []any, integers
// as int64.
func parsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the value", p.rest())
	}
	return v, nil
}

type pyParser struct {
	s     string
	i     int
	depth int
}

func (p *pyParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) value() (any, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("unexpected end of header")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict()
	case c == '[':
		return p.seq('[', ']')
	case c == '(':
		return p.seq('(', ')')
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		return p.int()
	default:
		for _, w := range []struct {
			name string
			v    any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.s[p.i:], w.name) {
				p.i += len(w.name)
				return w.v, nil
			}
		}
	}
	return nil, fmt.Errorf("unexpected %q", p.rest())
}

func (p *pyParser) enter() error {
	if p.depth++; p.depth > 32 {
		return fmt.Errorf("nested too deeply")
	}
	return nil
}

func (p *pyParser) dict() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++ // {
	m := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, nil
		}
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", k)
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, fmt.Errorf("expected ':' after key %q", ks)
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[ks] = v
		if err := p.sep('}'); err != nil {
			return nil, err
		}
	}
}

func (p *pyParser) seq(open, close byte) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.i++
	out := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == close {
			p.i++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if err := p.sep(close); err != nil {
			return nil, err
		}
	}
}

// sep consumes a ',' or stops before close.
func (p *pyParser) sep(close byte) error {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ',' {
		p.i++
		return nil
	}
	if p.i < len(p.s) && p.s[p.i] == close {
		return nil
	}
	return fmt.Errorf("expected ',' or %q at %q", close, p.rest())
}

func (p *pyParser) str() (any, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			p.i++
			switch e := p.s[p.i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	return nil, fmt.Errorf("unterminated string")
}

func (p *pyParser) int() (any, error) {
	j := p.i
	if p.s[j] == '-' || p.s[j] == '+' {
		j++
	}
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	if j < len(p.s) && p.s[j] == 'L' { // Python 2 long
		defer func() { p.i++ }()
	}
	n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("number %q: %w", p.s[p.i:j], err)
	}
	p.i = j
	return n, nil
}
