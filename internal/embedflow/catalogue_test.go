package embedflow

import (
	"os"
	"regexp"
	"testing"
)

// Every label of the flow templates is looked up through the catalogue.
func TestTemplatesUseOnlyCatalogueKeys(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../web/templates/embed.html")
	if err != nil {
		t.Fatal(err)
	}
	keys := regexp.MustCompile(`\.T "([^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(keys) < 10 {
		t.Fatalf("found only %d lookups", len(keys))
	}
	for _, k := range keys {
		if _, ok := Catalogue[k[1]]; !ok {
			t.Errorf("template uses %q, which the catalogue lacks", k[1])
		}
	}
	for _, typ := range generatableTypes {
		if _, ok := Catalogue["embed.questionTypes."+typ]; !ok {
			t.Errorf("no label for question type %s", typ)
		}
	}
}
