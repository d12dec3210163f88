// Command ceiling is the baseline for formd's benchmarks: a minimal
// net/http server that only decodes the same JSON body a submission
// carries and answers 201 with a small JSON document. Nothing is
// validated, written or synced, so its rate is the ceiling of what
// net/http and the load generator reach on the machine.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	flag.Parse()
	http.HandleFunc("POST /v1/forms/{form}/submissions", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"status":"stored"}`))
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
