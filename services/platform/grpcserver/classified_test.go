package grpcserver_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	accessv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/access/v1"
	lifecyclev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lifecycle/v1"
	lineagev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/lineage/v1"
	notificationv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/notification/v1"
	queuev1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/queue/v1"
	runnerv1 "github.com/zimmerhq/zimmer/proto/gen/zimmer/runner/v1"
	"github.com/zimmerhq/zimmer/services/platform/grpcserver"
	"github.com/zimmerhq/zimmer/services/platform/principal"
)

// Every generated package, so that its files are registered; the walk
// below also fails when a .proto declaring a service is not among them.
var _ = []protoreflect.FileDescriptor{
	lifecyclev1.File_zimmer_lifecycle_v1_lifecycle_service_proto,
	lineagev1.File_zimmer_lineage_v1_lineage_service_proto,
	notificationv1.File_zimmer_notification_v1_notification_service_proto,
	queuev1.File_zimmer_queue_v1_queue_service_proto,
	runnerv1.File_zimmer_runner_v1_runner_service_proto,
}

// sessionScopes are the scopes a public method may ask of a session
// credential ("" closes it to them).
var sessionScopes = []string{"", principal.ScopeSelf, principal.ScopeSessionsRead, principal.ScopeSessionsStart}

// Every RPC of every Zimmer service declares its access class, and a
// session scope only where a session credential may call it: an
// unclassified method would be refused to everyone at run time, and this
// test says so first, naming it.
func TestEveryMethodIsClassified(t *testing.T) {
	t.Parallel()
	var methods int
	var unclassified []string
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "zimmer.") {
			return true
		}
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				methods++
				acc := grpcserver.MethodAccess(md)
				if acc.GetClass() == accessv1.Class_CLASS_UNSPECIFIED {
					unclassified = append(unclassified, string(md.FullName()))
					continue
				}
				require.Contains(t, sessionScopes, acc.GetSessionScope(), "%s: unknown session scope", md.FullName())
				if acc.GetClass() != accessv1.Class_CLASS_PUBLIC {
					require.Empty(t, acc.GetSessionScope(), "%s: only a public method opens to session credentials", md.FullName())
				}
				require.Equal(t, acc, grpcserver.Access("/"+string(sd.FullName())+"/"+string(md.Name())), "the server looks the same rule up")
			}
		}
		return true
	})
	require.Empty(t, unclassified, "give each an option (zimmer.access.v1.access) = {class: …} (docs/security.md, Method classes)")
	require.Greater(t, methods, 30, "the walk saw Zimmer's services")
}

// Every .proto under proto/zimmer that declares a service is registered in
// this test binary, so the walk above cannot miss a new one.
func TestTheWalkSeesEveryServiceFile(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "proto")
	service := regexp.MustCompile(`(?m)^service \w+`)
	var files int
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "zimmer"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".proto") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !service.Match(src) {
			return nil
		}
		files++
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		_, err = protoregistry.GlobalFiles.FindFileByPath(filepath.ToSlash(rel))
		require.NoError(t, err, "%s declares a service: import its generated package in this test", rel)
		return nil
	}))
	require.Positive(t, files)
}
