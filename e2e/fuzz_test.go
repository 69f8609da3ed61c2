package e2e_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lifecycle/rules"
)

// fuzzBudget bounds the random part of the fuzz; the seeds and a fixed
// number of bodies from a fixed seed always run.
const (
	fuzzBudget     = 8 * time.Second
	fuzzFixedCount = 120
)

// fuzzBodies POSTs create bodies and PATCHes patch bodies through REST at
// the real stack: a seed corpus of known-bad shapes, bodies generated from a
// fixed seed, then bodies from a fresh seed (logged; ZIMMER_FUZZ_SEED
// replays one) until the budget runs out. The bodies nest, grow past the
// limits, carry NUL characters, invalid UTF-8 as raw bytes and lone
// surrogates, wrong types and broken JSON. Every answer must be 2xx or 4xx
// (never 5xx, never 429), a refused create must write no session, a
// refused patch must leave the session as it was, and whatever was written
// must read back, alone and in the list.
func fuzzBodies(t *testing.T, api restClient, db lifecycleDB) {
	target := createREST(t, api, `{"prompt":"p","git_root":"g","slug":"fuzz-target","custom_metadata":{"kept":true}}`)
	targetPath := fmt.Sprintf("/api/v1/sessions/%d", target)
	var created []int64

	create := func(t *testing.T, body string) {
		t.Helper()
		before := db.sessions(t)
		code, resp := api.do(t, "POST", "/api/v1/sessions", body)
		switch {
		case code == http.StatusCreated:
			var got struct{ Session struct{ ID int64 } }
			require.NoError(t, json.Unmarshal([]byte(resp), &got), resp)
			created = append(created, got.Session.ID)
			require.Equal(t, before+1, db.sessions(t))
			getSession(t, api, got.Session.ID)
		case code >= 400 && code < 500 && code != http.StatusTooManyRequests:
			require.Equal(t, before, db.sessions(t), "refused (%d) but written: %s", code, clip(body))
			require.Contains(t, resp, `"error"`, resp)
		default:
			require.Failf(t, "create answered neither a session nor a refusal", "%d %s\nbody: %s", code, clip(resp), clip(body))
		}
	}
	patch := func(t *testing.T, body string) {
		t.Helper()
		before := db.state(t, target)
		code, resp := api.do(t, "PATCH", targetPath, body)
		switch {
		case code == http.StatusOK:
			getSession(t, api, target)
		case code >= 400 && code < 500 && code != http.StatusTooManyRequests:
			require.Equal(t, before, db.state(t, target), "refused (%d) but written: %s", code, clip(body))
		default:
			require.Failf(t, "patch answered neither a session nor a refusal", "%d %s\nbody: %s", code, clip(resp), clip(body))
		}
	}

	for _, body := range createSeeds() {
		create(t, body)
	}
	for _, body := range patchSeeds() {
		patch(t, body)
	}
	fixed := fuzzer{rand.New(rand.NewPCG(9, 9))}
	for range fuzzFixedCount {
		create(t, fixed.createBody())
		patch(t, fixed.patchBody())
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ZIMMER_FUZZ_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "ZIMMER_FUZZ_SEED")
	}
	t.Logf("random bodies from seed %d (ZIMMER_FUZZ_SEED=%d replays them)", seed, seed)
	random := fuzzer{rand.New(rand.NewPCG(seed, seed))}
	n := 0
	for deadline := time.Now().Add(fuzzBudget); time.Now().Before(deadline); n++ {
		create(t, random.createBody())
		patch(t, random.patchBody())
	}
	t.Logf("%d seeds, %d fixed and %d random pairs of bodies; %d sessions created", len(createSeeds())+len(patchSeeds()), fuzzFixedCount, n, len(created))

	// Whatever was written reads back: every page of the list, and each
	// session with its timeline and events.
	for page := 1; ; page++ {
		code, resp := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions?per_page=%d&page=%d", rules.MaxPerPage, page), "")
		require.Equal(t, http.StatusOK, code, clip(resp))
		var got struct{ Sessions []any }
		require.NoError(t, json.Unmarshal([]byte(resp), &got))
		if len(got.Sessions) == 0 {
			break
		}
	}
	for _, id := range append(created, target) {
		for _, suffix := range []string{"", "/timeline", "/events"} {
			code, resp := api.do(t, "GET", fmt.Sprintf("/api/v1/sessions/%d%s", id, suffix), "")
			require.Equal(t, http.StatusOK, code, "session %d%s: %s", id, suffix, clip(resp))
		}
	}
}

// clip keeps a failure message readable.
func clip(s string) string {
	if len(s) > 400 {
		return fmt.Sprintf("%s… (%d bytes)", s[:400], len(s))
	}
	return s
}

// createSeeds are create bodies every run sends: each shape the issue found,
// and the JSON a decoder is most likely to mishandle.
func createSeeds() []string {
	seeds := []string{
		``, `null`, `[]`, `"x"`, `1`, `{`, `{"git_root":"g"`, `{"git_root":"g"}}`, `{"git_root":"g",}`,
		"\xef\xbb\xbf{\"git_root\":\"g\"}", "{\"git_root\":\"g\x00\"}", "{\"git_root\":\"g\"}\x00",
		`{"git_root":1}`, `{"git_root":["g"]}`, `{"git_root":{"a":1}}`, `{"git_root":null}`, `{"git_root":true}`,
		`{"git_root":" "}`, `{"git_root":"\u00a0"}`, `{"git_root":"g","prompt":1}`, `{"git_root":"g","prompt":null}`,
		`{"git_root":"g","custom_metadata":"x"}`, `{"git_root":"g","custom_metadata":[1]}`, `{"git_root":"g","custom_metadata":1}`,
		`{"git_root":"g","custom_metadata":null}`, `{"git_root":"g","custom_metadata":true}`, `{"git_root":"g","custom_metadata":{"n":1e400}}`,
		`{"git_root":"g","custom_metadata":{"n":-0}}`, `{"git_root":"g","custom_metadata":{"":""}}`,
		`{"git_root":"g","precedence":"high"}`, `{"git_root":"g","precedence":1e20}`, `{"git_root":"g","precedence":1.5}`,
		`{"git_root":"g","precedence":2147483648}`, `{"git_root":"g","precedence":-2147483649}`, `{"git_root":"g","precedence":"1"}`,
		`{"git_root":"g","parent_session_id":"abc"}`, `{"git_root":"g","parent_session_id":-1}`, `{"git_root":"g","parent_session_id":0}`,
		`{"git_root":"g","parent_session_id":1.5}`, `{"git_root":"g","parent_session_id":9223372036854775808}`,
		`{"git_root":"g","parent_session_id":"9223372036854775807"}`, `{"git_root":"g","parent_session_id":null}`,
		`{"git_root":"g","scheduling_class":"urgent"}`, `{"git_root":"g","scheduling_class":"SPOT"}`, `{"git_root":"g","scheduling_class":""}`,
		`{"git_root":"g","genesis":"web"}`, `{"git_root":"g","unknown":1}`, `{"git_root":"a","git_root":"b"}`,
		`{"git_root":"g","slug":"123"}`, `{"git_root":"g","slug":"-a"}`, `{"git_root":"g","slug":"A"}`, `{"git_root":"g","slug":"a\u0000"}`,
		`{"git_root":"g","title":"\ud800"}`, `{"git_root":"g\ud800\udc00"}`, `{"git_root":"g","title":"\udfff\ud800"}`,
		`{"git_root":"g","custom_metadata":{"a":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}}`,
		`{"git_root":"g","custom_metadata":` + nestedJSON(rules.MaxMetadataDepth+1) + `}`,
		`{"git_root":"g","custom_metadata":{"a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}`,
		`{"git_root":"g","custom_metadata":{"k":"` + strings.Repeat("a", rules.MaxMetadataBytes) + `"}}`,
		fmt.Sprintf(`{"git_root":"g","prompt":%q}`, strings.Repeat("p", 9<<20)),
	}
	for field, limit := range map[string]int{
		"prompt": rules.MaxPromptChars, "git_root": rules.MaxGitRootChars, "title": rules.MaxTitleChars, "goal": rules.MaxGoalChars,
		"branch": rules.MaxBranchChars, "subdirectory": rules.MaxSubdirectoryChars, "agent_root": rules.MaxAgentRootChars,
		"agent_runtime": rules.MaxAgentRuntimeChars, "slug": rules.MaxSlugChars,
	} {
		for _, v := range append([]string{strings.Repeat("a", limit+1), `a\u0000`, "a\xffb", `\ud800`}, whitespaceOnly...) {
			seeds = append(seeds, fmt.Sprintf(`{"git_root":"g",%q:"%s"}`, field, v))
		}
	}
	return seeds
}

// patchSeeds are patch bodies every run sends.
func patchSeeds() []string {
	return []string{
		``, `{}`, `null`, `[]`, `{`, `{"title":1}`, `{"title":null}`, `{"notes":"\u0000"}`, "{\"notes\":\"\xff\"}",
		`{"heartbeat_interval_seconds":"x"}`, `{"heartbeat_interval_seconds":29}`, `{"heartbeat_interval_seconds":1e10}`,
		`{"heartbeat_enabled":"yes"}`, `{"precedence":1e99}`, `{"custom_metadata":null}`, `{"custom_metadata":{"kept":null}}`,
		`{"custom_metadata":{"\u0000":1}}`, `{"custom_metadata":` + nestedJSON(rules.MaxMetadataDepth+1) + `}`,
		`{"custom_metadata":` + nestedJSON(rules.MaxMetadataDepth) + `}`, `{"slug":""}`, `{"slug":"fuzz-target"}`, `{"slug":"9"}`,
		`{"scheduling_class":null}`, `{"scheduling_class":"urgent"}`, `{"session_id":"1"}`, `{"status":"running"}`,
		`{"custom_metadata":{"big":"` + strings.Repeat("a", rules.MaxMetadataBytes-20) + `"}}`,
		fmt.Sprintf(`{"notes":%q}`, strings.Repeat("n", rules.MaxNotesChars+1)), `{"title":"ok"}`,
	}
}

// fuzzer generates request bodies as raw JSON text, so that it can write
// what a JSON encoder never would: raw invalid UTF-8, lone surrogates,
// broken syntax. A body starts valid and gets a few faults, so that both
// writes and refusals are exercised.
type fuzzer struct{ r *rand.Rand }

func (f fuzzer) pick(n int) int { return f.r.IntN(n) }

// text is a JSON string literal of valid, storable text of at most limit
// characters: usually short, sometimes 4-byte characters, sometimes at the
// limit.
func (f fuzzer) text(limit int) string {
	switch f.pick(10) {
	case 0:
		return `""`
	case 1:
		return `"` + strings.Repeat("𝄞", min(limit, 1+f.pick(300))) + `"`
	case 2:
		// Blank after trimming: refused where text must carry content.
		return `"` + whitespaceOnly[f.pick(len(whitespaceOnly))] + `"`
	case 3:
		if limit <= 2_048 {
			return `"` + strings.Repeat("a", limit) + `"`
		}
		fallthrough
	default:
		var b strings.Builder
		for range min(limit, 1+f.pick(24)) {
			b.WriteString([]string{"a", "Z", "0", " ", "-", "é", `\n`, `\u00e9`, `\\`, `\"`, "/", "𝄞"}[f.pick(12)])
		}
		return `"` + b.String() + `"`
	}
}

// badText is a JSON string literal the rules refuse wherever it goes: too
// long, a NUL, invalid UTF-8 as raw bytes, a lone surrogate.
func (f fuzzer) badText(limit int) string {
	switch f.pick(5) {
	case 0:
		return `"` + strings.Repeat("b", limit+1) + `"`
	case 1:
		return `"a\u0000b"`
	case 2:
		return "\"a\xffb\xc3\""
	case 3:
		return `"\ud800x"`
	default:
		return "\"\xed\xa0\x80\""
	}
}

// slug is a slug the rules allow.
func (f fuzzer) slug() string {
	var b strings.Builder
	b.WriteByte("abcdefghij"[f.pick(10)])
	for range f.pick(12) {
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789-"[f.pick(37)])
	}
	return `"` + b.String() + `"`
}

// number is a JSON number, sometimes one no integer field can hold.
func (f fuzzer) number() string {
	return []string{"0", "-1", "1", "42", "1.5", "1e400", "-0", "2147483648", "9223372036854775808", "1e-400", "60", "86400"}[f.pick(12)]
}

// value is any JSON value of storable text, nesting at most depth.
func (f fuzzer) value(depth int) string {
	k := f.pick(7)
	if depth <= 0 && k >= 5 {
		k = f.pick(5)
	}
	switch k {
	case 0, 1:
		return f.text(40)
	case 2:
		return []string{"0", "-1", "1.5", "1e300", "42"}[f.pick(5)]
	case 3:
		return []string{"true", "false"}[f.pick(2)]
	case 4:
		return "null"
	case 5:
		elems := make([]string, f.pick(4))
		for i := range elems {
			elems[i] = f.value(depth - 1)
		}
		return "[" + strings.Join(elems, ",") + "]"
	default:
		members := make([]string, f.pick(4))
		for i := range members {
			members[i] = f.text(8) + ":" + f.value(depth-1)
		}
		return "{" + strings.Join(members, ",") + "}"
	}
}

// metadata is a custom_metadata object the rules allow: at most
// MaxMetadataDepth levels including itself.
func (f fuzzer) metadata() string {
	if f.pick(8) == 0 {
		return nestedJSON(1 + f.pick(rules.MaxMetadataDepth))
	}
	members := make([]string, f.pick(5))
	for i := range members {
		members[i] = f.text(12) + ":" + f.value(f.pick(6))
	}
	return "{" + strings.Join(members, ",") + "}"
}

// badMetadata is a custom_metadata value the rules refuse.
func (f fuzzer) badMetadata() string {
	switch f.pick(6) {
	case 0:
		return nestedJSON(rules.MaxMetadataDepth + 1 + f.pick(8))
	case 1:
		return nestedJSON(rules.MaxMetadataDepth + 1 + f.pick(6_000))
	case 2:
		return `{"a":` + f.badText(10) + `}`
	case 3:
		return `{` + f.badText(10) + `:1}`
	case 4:
		return `{"a":[` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `]}`
	default:
		return `{"big":"` + strings.Repeat("m", rules.MaxMetadataBytes) + `"}`
	}
}

// field is one member of a body: a valid value and a refused one of the
// same type.
type field struct {
	name      string
	good, bad func() string
}

// object writes a body: each field present or not, valid, then 0 to 3
// faults — a refused value, a value of another type, an unknown member, or
// broken bytes.
func (f fuzzer) object(fields []field, required ...string) string {
	values := map[string]string{}
	var order []string
	for _, fd := range fields {
		if slices.Contains(required, fd.name) || f.pick(2) == 0 {
			values[fd.name] = fd.good()
			order = append(order, fd.name)
		}
	}
	breakBytes := false
	for range []int{0, 0, 1, 1, 1, 2, 3}[f.pick(7)] {
		fd := fields[f.pick(len(fields))]
		if _, ok := values[fd.name]; !ok {
			order = append(order, fd.name)
		}
		switch f.pick(10) {
		case 0, 1:
			values[fd.name] = f.value(2) // most likely another type
		case 2:
			order = append(order, "unknown")
			values["unknown"] = f.value(1)
		case 3:
			breakBytes = true
		default:
			values[fd.name] = fd.bad()
		}
	}
	members := make([]string, 0, len(order))
	for _, name := range order {
		members = append(members, strconv.Quote(name)+":"+values[name])
	}
	body := "{" + strings.Join(members, ",") + "}"
	if breakBytes {
		i := f.pick(len(body))
		switch f.pick(3) {
		case 0:
			body = body[:i]
		case 1:
			body = body[:i] + "\xff" + body[i:]
		default:
			body = body[:i] + "\x00" + body[i:]
		}
	}
	return body
}

func (f fuzzer) stringField(name string, limit int) field {
	return field{name, func() string { return f.text(limit) }, func() string { return f.badText(limit) }}
}

func (f fuzzer) createBody() string {
	return f.object([]field{
		{"git_root", func() string {
			if f.pick(3) == 0 {
				return f.text(rules.MaxGitRootChars)
			}
			return `"git@example.com:acme/app.git"`
		}, func() string { return []string{`"   "`, `""`, f.badText(rules.MaxGitRootChars)}[f.pick(3)] }},
		f.stringField("prompt", rules.MaxPromptChars),
		f.stringField("title", rules.MaxTitleChars),
		f.stringField("goal", rules.MaxGoalChars),
		f.stringField("branch", rules.MaxBranchChars),
		f.stringField("subdirectory", rules.MaxSubdirectoryChars),
		f.stringField("agent_root", rules.MaxAgentRootChars),
		f.stringField("agent_runtime", rules.MaxAgentRuntimeChars),
		{"slug", f.slug, func() string { return []string{`"123"`, `"-a"`, `"A"`, f.badText(rules.MaxSlugChars)}[f.pick(4)] }},
		{"scheduling_class", func() string { return []string{`"priority"`, `"spot"`, `""`}[f.pick(3)] },
			func() string { return []string{`"urgent"`, `"SPOT"`, f.badText(10)}[f.pick(3)] }},
		{"precedence", func() string { return strconv.Itoa(f.pick(100) - 50) }, f.number},
		{"parent_session_id", func() string { return strconv.Itoa(1 + f.pick(5)) }, f.number},
		{"custom_metadata", f.metadata, f.badMetadata},
	}, "git_root")
}

func (f fuzzer) patchBody() string {
	return f.object([]field{
		f.stringField("title", rules.MaxTitleChars),
		f.stringField("notes", rules.MaxNotesChars),
		f.stringField("goal", rules.MaxGoalChars),
		{"slug", func() string { return []string{`"fuzz-target"`, `""`}[f.pick(2)] },
			func() string { return []string{`"123"`, `"A"`, f.badText(rules.MaxSlugChars)}[f.pick(3)] }},
		{"scheduling_class", func() string { return []string{`"priority"`, `"spot"`}[f.pick(2)] },
			func() string { return []string{`"urgent"`, `""`, f.badText(10)}[f.pick(3)] }},
		{"precedence", func() string { return strconv.Itoa(f.pick(100) - 50) }, f.number},
		{"custom_metadata", f.metadata, f.badMetadata},
		{"heartbeat_enabled", func() string { return []string{"true", "false"}[f.pick(2)] }, func() string { return `"true"` }},
		{"heartbeat_interval_seconds", func() string { return strconv.Itoa(rules.MinHeartbeatSeconds + f.pick(1000)) },
			func() string { return []string{"29", "86401", "-1", "1.5", "1e400"}[f.pick(5)] }},
	}, "title")
}
