package k8s_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDockerfiles: each binary the manifests run has its image's
// Dockerfile (deploy/images), which builds that command statically and
// runs it as the user the manifests name. No Docker here: the test reads
// the files.
func TestDockerfiles(t *testing.T) {
	t.Parallel()
	for name, cmd := range binaries {
		path := filepath.Join(repoRoot(), "deploy", "images", name+".Dockerfile")
		b, err := os.ReadFile(path)
		require.NoError(t, err, "%s's image", name)
		df := string(b)
		require.Contains(t, df, "CGO_ENABLED=0 go build", "%s: a static build", path)
		require.Contains(t, df, cmd, "%s builds %s", path, cmd)
		require.Contains(t, df, "\nUSER 65532:65532\n", "%s: the manifests' runAsUser, numeric so runAsNonRoot can be checked", path)
		require.True(t, strings.Count(df, "\nFROM ") >= 2, "%s: multi-stage", path)
	}
}
