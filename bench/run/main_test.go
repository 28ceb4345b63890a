package main

import "testing"

// -only: a workload's exact name selects it alone, a part of names selects
// every workload containing it, and items combine.
func TestSelected(t *testing.T) {
	for _, c := range []struct {
		only string
		want []string
	}{
		{"million", []string{"million"}},
		{"ten-million", []string{"ten-million"}},
		{"million-files,ten-million", []string{"million-files", "ten-million"}},
		{"mnist", []string{"mnist-784B", "mnist-784B-azure", "mnist-784B-gcs", "mnist-784B-s3"}},
		{"azure", []string{"mnist-784B-azure"}},
		{"gcs", []string{"mnist-784B-gcs"}},
		{"s3", []string{"mnist-784B-s3"}},
		{"nothing", nil},
		{",", nil},
	} {
		var got []string
		for _, w := range workloads {
			if selected(w.name, c.only) {
				got = append(got, w.name)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("-only %q selects %v, want %v", c.only, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("-only %q selects %v, want %v", c.only, got, c.want)
				break
			}
		}
	}
}
