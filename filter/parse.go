package filter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The grammar (keywords case-insensitive):
//
//	expr    = or
//	or      = and { OR and }
//	and     = not { AND not }
//	not     = NOT not | pred
//	pred    = operand [ cmpop operand
//	                  | [NOT] IN "(" literal { "," literal } ")"
//	                  | [NOT] BETWEEN operand AND operand
//	                  | IS [NOT] NULL ]
//	operand = column | literal | "(" expr ")"
//	cmpop   = "=" | "==" | "<>" | "!=" | "<" | "<=" | ">" | ">="
//	literal = number | 'string' | X'hex' | TRUE | FALSE | NULL
//	        | DATE 'yyyy-mm-dd' | TIMESTAMP '...' | TIMESTAMP_NTZ '...'
//	column  = name | `quoted name` | "quoted name"
//
// Limits keep a hostile expression bounded in memory and time: MaxText
// bytes of text, MaxDepth levels of nesting (parentheses and NOT),
// MaxList values in one IN list, and number literals of at most MaxDigits
// digits with an exponent within ±MaxExponent (past every Delta type's
// range: double reaches 1.8e308 and 4.9e-324, decimal 38 digits). A
// number's cost grows with its exponent (1e999999 is a million-digit
// integer), so these keep every literal a few hundred bytes. AND and OR
// chains are flat (n-ary), so a long chain nests nothing.

// Limits on an expression.
const (
	MaxText     = 1 << 20
	MaxDepth    = 64
	MaxList     = 1 << 17
	MaxDigits   = 100
	MaxExponent = 400
)

// syntax tree, before binding to a schema.
type sexpr interface{ pos() int }

type (
	sBool struct {
		at  int
		and bool // AND, else OR
		xs  []sexpr
	}
	sNot struct {
		at int
		x  sexpr
	}
	sCmp struct {
		at   int
		op   string // = <> < <= > >=
		l, r sexpr
	}
	sIn struct {
		at   int
		x    sexpr
		list []*sLit
		not  bool
	}
	sBetween struct {
		at         int
		x, lo, hi  sexpr
		not        bool
		loAt, hiAt int
	}
	sIsNull struct {
		at  int
		x   sexpr
		not bool
	}
	sIdent struct {
		at   int
		name string
	}
	sLit struct {
		at   int
		kind litKind
		text string // number text, string content, hex digits
	}
)

type litKind uint8

const (
	litNum litKind = iota
	litStr
	litHex
	litTrue
	litFalse
	litNull
	litDate
	litTimestamp
	litTimestampNTZ
)

func (x *sBool) pos() int    { return x.at }
func (x *sNot) pos() int     { return x.at }
func (x *sCmp) pos() int     { return x.at }
func (x *sIn) pos() int      { return x.at }
func (x *sBetween) pos() int { return x.at }
func (x *sIsNull) pos() int  { return x.at }
func (x *sIdent) pos() int   { return x.at }
func (x *sLit) pos() int     { return x.at }

// Error is an expression that cannot be used: a syntax error, something
// deltafs does not support, or a column or type that does not fit the
// schema. It prints as one line naming the part at fault.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return "--where: " + e.Msg }

// token kinds
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQuoted // a quoted identifier
	tNum
	tStr
	tHex
	tOp // = == <> != < <= > >= ( ) ,
	tOther
)

type token struct {
	kind tokKind
	text string // identifier, number, string content, operator
	at   int    // byte offset
	raw  string // as written (for messages)
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'':
			s, n, err := quoted(src, i, '\'')
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tStr, text: s, at: i, raw: src[i : i+n]})
			i += n
		case c == '`' || c == '"':
			s, n, err := quoted(src, i, c)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tQuoted, text: s, at: i, raw: src[i : i+n]})
			i += n
		case (c == 'x' || c == 'X') && i+1 < len(src) && src[i+1] == '\'':
			s, n, err := quoted(src, i+1, '\'')
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tHex, text: s, at: i, raw: src[i : i+1+n]})
			i += 1 + n
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if j < len(src) && isIdentByte(src[j]) {
				// 12abc, 1L, 2.5D: Spark's typed suffixes are not SQL.
				end := j
				for end < len(src) && isIdentByte(src[end]) {
					end++
				}
				return nil, &Error{fmt.Sprintf("%q at offset %d is not a number", src[i:end], i)}
			}
			if err := checkNumber(src[i:j], i); err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tNum, text: src[i:j], at: i, raw: src[i:j]})
			i = j
		case isIdentStart(src, i):
			j := i
			for j < len(src) {
				r, n := utf8.DecodeRuneInString(src[j:])
				if !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
					break
				}
				j += n
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], at: i, raw: src[i:j]})
			i = j
		default:
			for _, op := range []string{"<=>", "==", "<>", "!=", "<=", ">=", "||", "::", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(src[i:], op) {
					toks = append(toks, token{kind: tOp, text: op, at: i, raw: op})
					i += len(op)
					goto next
				}
			}
			{
				r, n := utf8.DecodeRuneInString(src[i:])
				if r == utf8.RuneError && n <= 1 {
					return nil, &Error{fmt.Sprintf("invalid UTF-8 at offset %d", i)}
				}
				toks = append(toks, token{kind: tOther, text: string(r), at: i, raw: string(r)})
				i += n
			}
		next:
		}
	}
	toks = append(toks, token{kind: tEOF, at: len(src), raw: "end of expression"})
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isIdentStart(src string, i int) bool {
	r, _ := utf8.DecodeRuneInString(src[i:])
	return r == '_' || unicode.IsLetter(r)
}

// quoted reads a string quoted by q at src[i], where a doubled q stands
// for one (SQL); it returns the content and the bytes taken.
func quoted(src string, i int, q byte) (string, int, error) {
	var b strings.Builder
	j := i + 1
	for {
		k := strings.IndexByte(src[j:], q)
		if k < 0 {
			return "", 0, &Error{fmt.Sprintf("unterminated quote %c at offset %d", q, i)}
		}
		b.WriteString(src[j : j+k])
		j += k + 1
		if j < len(src) && src[j] == q {
			b.WriteByte(q)
			j++
			continue
		}
		return b.String(), j - i, nil
	}
}

type parser struct {
	toks  []token
	i     int
	depth int
	src   string
}

// parse reads an expression into its syntax tree.
func parse(src string) (sexpr, error) {
	if len(src) > MaxText {
		return nil, &Error{fmt.Sprintf("the expression has %d bytes, more than %d", len(src), MaxText)}
	}
	if strings.TrimSpace(src) == "" {
		return nil, &Error{"empty expression"}
	}
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, &Error{fmt.Sprintf("invalid UTF-8 at offset %d", i)}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, src: src}
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t, "the end of the expression")
	}
	return x, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

// keyword reports whether the next token is the keyword kw.
func (p *parser) keyword(kw string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return &Error{fmt.Sprintf("the expression nests deeper than %d levels at offset %d", MaxDepth, p.peek().at)}
	}
	return nil
}

func (p *parser) or() (sexpr, error) {
	at := p.peek().at
	x, err := p.and()
	if err != nil {
		return nil, err
	}
	xs := []sexpr{x}
	for p.keyword("OR") {
		p.next()
		y, err := p.and()
		if err != nil {
			return nil, err
		}
		xs = append(xs, y)
	}
	if len(xs) == 1 {
		return x, nil
	}
	return &sBool{at: at, xs: xs}, nil
}

func (p *parser) and() (sexpr, error) {
	at := p.peek().at
	x, err := p.not()
	if err != nil {
		return nil, err
	}
	xs := []sexpr{x}
	for p.keyword("AND") {
		p.next()
		y, err := p.not()
		if err != nil {
			return nil, err
		}
		xs = append(xs, y)
	}
	if len(xs) == 1 {
		return x, nil
	}
	return &sBool{at: at, and: true, xs: xs}, nil
}

func (p *parser) not() (sexpr, error) {
	if p.keyword("NOT") {
		t := p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		x, err := p.not()
		p.depth--
		if err != nil {
			return nil, err
		}
		return &sNot{at: t.at, x: x}, nil
	}
	return p.pred()
}

var cmpOps = map[string]string{"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) pred() (sexpr, error) {
	x, err := p.operand()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind == tOp {
		if op, ok := cmpOps[t.text]; ok {
			p.next()
			y, err := p.operand()
			if err != nil {
				return nil, err
			}
			return &sCmp{at: t.at, op: op, l: x, r: y}, nil
		}
		if t.text == "<=>" {
			return nil, &Error{fmt.Sprintf("the null-safe comparison <=> at offset %d is not supported (use IS NULL with OR)", t.at)}
		}
		if t.text == "||" || t.text == "::" {
			return nil, p.unsupportedOp(t)
		}
	}
	if t.kind == tOther {
		return nil, p.unsupportedOp(t)
	}
	not := false
	if p.keyword("NOT") {
		// x NOT IN / NOT BETWEEN / NOT LIKE
		nt := p.toks[p.i+1]
		if nt.kind == tIdent && (strings.EqualFold(nt.text, "IN") || strings.EqualFold(nt.text, "BETWEEN")) {
			p.next()
			not = true
		} else if nt.kind == tIdent && isUnsupportedKeyword(nt.text) {
			return nil, &Error{fmt.Sprintf("NOT %s at offset %d is not supported", strings.ToUpper(nt.text), nt.at)}
		}
	}
	switch {
	case p.keyword("IN"):
		in := p.next()
		return p.inList(in, x, not)
	case p.keyword("BETWEEN"):
		bt := p.next()
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if !p.keyword("AND") {
			return nil, p.unexpected(p.peek(), "AND of BETWEEN")
		}
		p.next()
		hi, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &sBetween{at: bt.at, x: x, lo: lo, hi: hi, not: not}, nil
	case p.keyword("IS"):
		it := p.next()
		isNot := false
		if p.keyword("NOT") {
			p.next()
			isNot = true
		}
		if !p.keyword("NULL") {
			n := p.peek()
			if n.kind == tIdent && (strings.EqualFold(n.text, "TRUE") || strings.EqualFold(n.text, "FALSE") || strings.EqualFold(n.text, "DISTINCT") || strings.EqualFold(n.text, "UNKNOWN")) {
				return nil, &Error{fmt.Sprintf("IS %s at offset %d is not supported (only IS [NOT] NULL)", strings.ToUpper(n.text), n.at)}
			}
			return nil, p.unexpected(n, "NULL after IS")
		}
		p.next()
		return &sIsNull{at: it.at, x: x, not: isNot}, nil
	}
	if t := p.peek(); t.kind == tIdent && isUnsupportedKeyword(t.text) {
		return nil, &Error{fmt.Sprintf("%s at offset %d is not supported", strings.ToUpper(t.text), t.at)}
	}
	return x, nil
}

// isUnsupportedKeyword names SQL predicates deltafs refuses by name.
func isUnsupportedKeyword(s string) bool {
	switch strings.ToUpper(s) {
	case "LIKE", "ILIKE", "RLIKE", "REGEXP", "SIMILAR", "GLOB":
		return true
	}
	return false
}

func (p *parser) unsupportedOp(t token) error {
	switch t.text {
	case "+", "-", "*", "/", "%", "||", "&", "|", "^", "~":
		return &Error{fmt.Sprintf("arithmetic and other operators (%s at offset %d) are not supported: compare a column with a literal", t.text, t.at)}
	case "::":
		return &Error{fmt.Sprintf("casts (:: at offset %d) are not supported", t.at)}
	}
	return &Error{fmt.Sprintf("unexpected %q at offset %d", t.text, t.at)}
}

func (p *parser) inList(in token, x sexpr, not bool) (sexpr, error) {
	if t := p.next(); t.kind != tOp || t.text != "(" {
		return nil, p.unexpected(t, "( after IN")
	}
	if p.keyword("SELECT") || p.keyword("WITH") {
		return nil, &Error{fmt.Sprintf("subqueries (IN (SELECT ...) at offset %d) are not supported", p.peek().at)}
	}
	n := &sIn{at: in.at, x: x, not: not}
	for {
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		lit, ok := o.(*sLit)
		if !ok {
			return nil, &Error{fmt.Sprintf("IN at offset %d lists something other than a literal at offset %d: only literals are supported", in.at, o.pos())}
		}
		if len(n.list) >= MaxList {
			return nil, &Error{fmt.Sprintf("IN at offset %d lists more than %d values", in.at, MaxList)}
		}
		n.list = append(n.list, lit)
		t := p.next()
		if t.kind == tOp && t.text == ")" {
			return n, nil
		}
		if t.kind != tOp || t.text != "," {
			return nil, p.unexpected(t, ", or ) in the IN list")
		}
	}
}

func (p *parser) operand() (sexpr, error) {
	t := p.next()
	switch t.kind {
	case tEOF:
		return nil, &Error{"the expression ends too early"}
	case tNum:
		return &sLit{at: t.at, kind: litNum, text: t.text}, nil
	case tStr:
		return &sLit{at: t.at, kind: litStr, text: t.text}, nil
	case tHex:
		return &sLit{at: t.at, kind: litHex, text: t.text}, nil
	case tQuoted:
		if p.peek().kind == tOp && p.peek().text == "(" {
			return nil, &Error{fmt.Sprintf("function calls (%s( at offset %d) are not supported", t.raw, t.at)}
		}
		return p.column(t, t.text)
	case tOther:
		if t.text == "-" || t.text == "+" {
			// A signed number literal.
			if n := p.peek(); n.kind == tNum {
				p.next()
				text := n.text
				if t.text == "-" {
					text = "-" + text
				}
				return &sLit{at: t.at, kind: litNum, text: text}, nil
			}
		}
		return nil, p.unsupportedOp(t)
	case tOp:
		if t.text == "(" {
			if p.keyword("SELECT") || p.keyword("WITH") {
				return nil, &Error{fmt.Sprintf("subqueries (SELECT at offset %d) are not supported", p.peek().at)}
			}
			if err := p.enter(); err != nil {
				return nil, err
			}
			x, err := p.or()
			p.depth--
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.kind != tOp || c.text != ")" {
				return nil, p.unexpected(c, ") to close the ( at offset "+fmt.Sprint(t.at))
			}
			return x, nil
		}
		return nil, p.unexpected(t, "a column or a literal")
	case tIdent:
		switch strings.ToUpper(t.text) {
		case "TRUE":
			return &sLit{at: t.at, kind: litTrue}, nil
		case "FALSE":
			return &sLit{at: t.at, kind: litFalse}, nil
		case "NULL":
			return &sLit{at: t.at, kind: litNull}, nil
		case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ":
			if n := p.peek(); n.kind == tStr {
				p.next()
				kind := litDate
				switch strings.ToUpper(t.text) {
				case "TIMESTAMP", "TIMESTAMP_LTZ":
					kind = litTimestamp
				case "TIMESTAMP_NTZ":
					kind = litTimestampNTZ
				}
				return &sLit{at: t.at, kind: kind, text: n.text}, nil
			}
		case "SELECT", "EXISTS", "WITH":
			return nil, &Error{fmt.Sprintf("subqueries (%s at offset %d) are not supported", strings.ToUpper(t.text), t.at)}
		case "CASE", "CAST", "INTERVAL":
			return nil, &Error{fmt.Sprintf("%s at offset %d is not supported", strings.ToUpper(t.text), t.at)}
		case "AND", "OR", "NOT", "IN", "BETWEEN", "IS":
			return nil, p.unexpected(t, "a column or a literal")
		}
		if n := p.peek(); n.kind == tOp && n.text == "(" {
			return nil, &Error{fmt.Sprintf("function calls (%s( at offset %d) are not supported", t.text, t.at)}
		}
		return p.column(t, t.text)
	}
	return nil, p.unexpected(t, "a column or a literal")
}

// column is a column reference; a dotted name is a nested field, which
// is not supported.
func (p *parser) column(t token, name string) (sexpr, error) {
	if n := p.peek(); n.kind == tOther && n.text == "." {
		return nil, &Error{fmt.Sprintf("nested fields (%s. at offset %d) are not supported: only top-level columns", t.raw, t.at)}
	}
	return &sIdent{at: t.at, name: name}, nil
}

func (p *parser) unexpected(t token, want string) error {
	if t.kind == tEOF {
		return &Error{fmt.Sprintf("the expression ends where %s was expected", want)}
	}
	return &Error{fmt.Sprintf("unexpected %s at offset %d: expected %s", quoteTok(t), t.at, want)}
}

func quoteTok(t token) string {
	r := t.raw
	if len(r) > 40 {
		r = r[:40] + "..."
	}
	return fmt.Sprintf("%q", r)
}

// checkNumber refuses a number literal past MaxDigits digits or an
// exponent beyond ±MaxExponent, before anything converts it.
func checkNumber(text string, at int) error {
	mant, exp, _ := strings.Cut(strings.ToLower(text), "e")
	digits := 0
	for _, c := range mant {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	if digits > MaxDigits {
		return &Error{fmt.Sprintf("the number at offset %d has %d digits, more than %d", at, digits, MaxDigits)}
	}
	if exp == "" {
		return nil
	}
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if e, err := strconv.Atoi(exp); exp != "" && (len(exp) > 4 || err != nil || e > MaxExponent) {
		return &Error{fmt.Sprintf("the number at offset %d has an exponent beyond ±%d, the limit", at, MaxExponent)}
	}
	return nil
}
