package assessment

import (
	"fmt"
	"strings"
	"testing"
)

// TestPaperCacheBytesBounded: the cache drops its oldest papers once their
// prompts and configs pass paperCacheBytes, keeps the newest, and skips a
// paper past paperEntryBytes.
func TestPaperCacheBytesBounded(t *testing.T) {
	p := newPapers()
	paperOf := func(bytes int) submission {
		return submission{questions: []Question{{Prompt: strings.Repeat("x", bytes), Config: map[string]any{},
			Def: &TypeDef{BuiltIn: true}}}}
	}
	const each = paperEntryBytes - 1024
	for i := range 20 {
		p.add("org", fmt.Sprint(i), paperOf(each))
	}
	if got, max := p.bytes.Load(), int64(paperCacheBytes); got > max || got < max-2*each {
		t.Fatalf("the cache holds %d bytes of papers, want at most %d and nearly as many", got, max)
	}
	if _, ok := p.get("org", "19"); !ok {
		t.Error("the newest paper was dropped")
	}
	if _, ok := p.get("org", "0"); ok {
		t.Error("the oldest paper is still held past the bound")
	}
	p.add("org", "again", paperOf(100))
	p.add("org", "again", paperOf(200)) // replaced, counted once
	p.add("org", "huge", paperOf(paperEntryBytes+1))
	if _, ok := p.get("org", "huge"); ok {
		t.Error("a paper past paperEntryBytes was cached")
	}
	var held int64
	for _, k := range p.lru.Keys() {
		e, _ := p.lru.Peek(k)
		held += e.size
	}
	if held != p.bytes.Load() {
		t.Errorf("the count says %d bytes, the entries hold %d", p.bytes.Load(), held)
	}
}
