package main

// A port of the grammar of helm's pkg/strvals (--set and --set-string):
//
//	a.b=c,d[0]=e,f={x,y},g\.h=i
//
// Values are typed as helm types them: true/false, null (deletes the key when merged),
// integers without a leading zero as int64, everything else a string; --set-string keeps
// every value a string.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

func jsonMarshal(v interface{}) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v interface{}) error { return json.Unmarshal(b, v) }

func typedVal(val string, st bool) interface{} {
	if st {
		return val
	}
	if strings.EqualFold(val, "true") {
		return true
	}
	if strings.EqualFold(val, "false") {
		return false
	}
	if strings.EqualFold(val, "null") {
		return nil
	}
	if val == "0" {
		return int64(0)
	}
	if len(val) != 0 && val[0] != '0' {
		if iv, err := strconv.ParseInt(val, 10, 64); err == nil {
			return iv
		}
	}
	return val
}

type setParser struct {
	s   []rune
	i   int
	str bool
}

func (p *setParser) eof() bool { return p.i >= len(p.s) }

// until reads runes up to (not including) one of stops, honouring backslash escapes.
func (p *setParser) until(stops string) (string, rune) {
	var b strings.Builder
	for !p.eof() {
		r := p.s[p.i]
		if r == '\\' && p.i+1 < len(p.s) {
			b.WriteRune(p.s[p.i+1])
			p.i += 2
			continue
		}
		if strings.ContainsRune(stops, r) {
			p.i++
			return b.String(), r
		}
		b.WriteRune(r)
		p.i++
	}
	return b.String(), 0
}

type pathElem struct {
	key   string
	index int
	isIdx bool
}

func parseInto(s string, dst map[string]interface{}, stringOnly bool) error {
	p := &setParser{s: []rune(s), str: stringOnly}
	for !p.eof() {
		var elems []pathElem
		for {
			name, stop := p.until(".=[,")
			if name == "" {
				return fmt.Errorf("key in %q has an empty name", s)
			}
			elems = append(elems, pathElem{key: name})
			for stop == '[' {
				num, st := p.until("]")
				if st != ']' {
					return fmt.Errorf("key %q: unterminated index", name)
				}
				n, err := strconv.Atoi(num)
				if err != nil || n < 0 {
					return fmt.Errorf("key %q: bad index %q", name, num)
				}
				elems = append(elems, pathElem{index: n, isIdx: true})
				if p.eof() {
					return fmt.Errorf("key %q has no value", name)
				}
				stop = p.s[p.i]
				p.i++
			}
			if stop == '=' {
				break
			}
			if stop != '.' {
				return fmt.Errorf("key %q has no value", name)
			}
		}
		var val interface{}
		if !p.eof() && p.s[p.i] == '{' {
			p.i++
			var list []interface{}
			for {
				item, stop := p.until(",}")
				list = append(list, typedVal(item, p.str))
				if stop == '}' {
					break
				}
				if stop == 0 {
					return fmt.Errorf("unterminated list in %q", s)
				}
			}
			if !p.eof() {
				if p.s[p.i] != ',' {
					return fmt.Errorf("unexpected %q after list in %q", p.s[p.i], s)
				}
				p.i++
			}
			val = list
		} else {
			v, _ := p.until(",")
			val = typedVal(v, p.str)
		}
		if err := setPath(dst, elems, val); err != nil {
			return err
		}
	}
	return nil
}

func setPath(dst map[string]interface{}, elems []pathElem, val interface{}) error {
	if len(elems) == 0 || elems[0].isIdx {
		return fmt.Errorf("a --set key must start with a name")
	}
	var cur interface{} = dst
	var assign func(interface{})
	for i, e := range elems {
		last := i == len(elems)-1
		if e.isIdx {
			list, _ := cur.([]interface{})
			for len(list) <= e.index {
				list = append(list, nil)
			}
			assign(list)
			if last {
				list[e.index] = val
				return nil
			}
			idx := e.index
			next := list[idx]
			if elems[i+1].isIdx {
				if _, ok := next.([]interface{}); !ok {
					next = []interface{}{}
				}
			} else if _, ok := next.(map[string]interface{}); !ok {
				next = map[string]interface{}{}
			}
			list[idx] = next
			l := list
			assign = func(v interface{}) { l[idx] = v }
			cur = next
			continue
		}
		m := cur.(map[string]interface{})
		if last {
			m[e.key] = val
			return nil
		}
		next := m[e.key]
		if elems[i+1].isIdx {
			if _, ok := next.([]interface{}); !ok {
				next = []interface{}{}
			}
		} else if _, ok := next.(map[string]interface{}); !ok {
			next = map[string]interface{}{}
		}
		m[e.key] = next
		key := e.key
		assign = func(v interface{}) { m[key] = v }
		cur = next
	}
	return nil
}
