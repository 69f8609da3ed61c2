package domain_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zimmerhq/zimmer/services/lineage/internal/domain"
	"github.com/zimmerhq/zimmer/services/platform/validation"
)

func strp(s string) *string { return &s }

func TestUserValidate(t *testing.T) {
	t.Parallel()
	valid := domain.User{Key: "tadasant", DisplayName: "Tadas", SlackUserIDs: []string{"U012AB3CD"}}
	tests := []struct {
		name   string
		modify func(*domain.User)
		field  string
	}{
		{"valid", func(*domain.User) {}, ""},
		{"email", func(u *domain.User) { u.Email = "t@example.com" }, ""},
		{"no key", func(u *domain.User) { u.Key = "" }, "key"},
		{"upper-case key", func(u *domain.User) { u.Key = "Tadas" }, "key"},
		{"key with space", func(u *domain.User) { u.Key = "ta das" }, "key"},
		{"no display name", func(u *domain.User) { u.DisplayName = "" }, "display_name"},
		{"bad email", func(u *domain.User) { u.Email = "nobody" }, "email"},
		{"bad Slack ID", func(u *domain.User) { u.SlackUserIDs = []string{"u123"} }, "slack_user_ids"},
		{"duplicate Slack ID", func(u *domain.User) { u.SlackUserIDs = []string{"U1", "U1"} }, "slack_user_ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := valid
			tt.modify(&u)
			err := u.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ve *validation.Error
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Violations, 1)
			require.Equal(t, tt.field, ve.Violations[0].Field)
		})
	}
}

func TestUserPatchKeepsKeyAndNormalizes(t *testing.T) {
	t.Parallel()
	u := domain.User{Key: "juliehazz", DisplayName: "Julie"}
	ids := []string{" W2 ", "U1", ""}
	require.NoError(t, domain.UserPatch{DisplayName: strp(" Julie H "), SlackUserIDs: &ids, Notes: strp("final say on UI")}.Apply(&u))
	require.Equal(t, domain.User{Key: "juliehazz", DisplayName: "Julie H", SlackUserIDs: []string{"U1", "W2"}, Notes: "final say on UI"}, u)
	require.True(t, domain.UserPatch{}.Empty())
}

// What an operator types is stored the way it was meant: trimmed, blanks
// dropped, a repeated Slack ID merged rather than refused, the email
// lower-cased.
func TestUserNormalize(t *testing.T) {
	t.Parallel()
	u := domain.User{Key: " sam ", DisplayName: " Sam ", Email: "  Sam@Example.COM ", SlackUserIDs: []string{" U9 ", "", "W2", "U9", "  "}}
	u.Normalize()
	require.Equal(t, domain.User{Key: "sam", DisplayName: "Sam", Email: "sam@example.com", SlackUserIDs: []string{"U9", "W2"}}, u)
	require.NoError(t, u.Validate())

	ids := []string{"U1", " U1", "U1 "}
	julie := domain.User{Key: "juliehazz", DisplayName: "Julie"}
	require.NoError(t, domain.UserPatch{SlackUserIDs: &ids, Email: strp("JULIE@example.com ")}.Apply(&julie))
	require.Equal(t, []string{"U1"}, julie.SlackUserIDs)
	require.Equal(t, "julie@example.com", julie.Email)
}

func TestRosterResolution(t *testing.T) {
	t.Parallel()
	roster := domain.NewRoster([]domain.User{
		{Key: "tadasant", DisplayName: "Tadas", SlackUserIDs: []string{"U1"}},
		{Key: "juliehazz", DisplayName: "Julie", SlackUserIDs: []string{"U2"}},
	})

	admin, ok := roster.Admin("")
	require.True(t, ok, "unset falls back to tadasant")
	require.Equal(t, "tadasant", admin.Key)
	admin, ok = roster.Admin("juliehazz")
	require.True(t, ok)
	require.Equal(t, "Julie", admin.DisplayName)
	_, ok = roster.Admin("tadasnat")
	require.False(t, ok, "a typo resolves to nobody")
	_, ok = domain.NewRoster(nil).Admin("")
	require.False(t, ok, "a deleted default row resolves to nobody")

	u, ok := roster.BySlackID("U2")
	require.True(t, ok)
	require.Equal(t, "juliehazz", u.Key)
	_, ok = roster.BySlackID("U9")
	require.False(t, ok, "an unmapped ID is nobody, not an invented author")
	_, ok = roster.BySlackID("")
	require.False(t, ok)
}

func TestUserErrors(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, &domain.SlackIDTakenError{SlackUserID: "U1", Owner: "tadasant"}, domain.ErrConflict)
	require.EqualError(t, &domain.SlackIDTakenError{SlackUserID: "U1", Owner: "tadasant", Claimant: "juliehazz"},
		`slack user ID U1 already belongs to user "tadasant", so it cannot also be user "juliehazz"'s; one ID never belongs to two users: remove it from "tadasant" first`)
	require.ErrorIs(t, &domain.EmailTakenError{Email: "j@example.com", Owner: "juliehazz"}, domain.ErrConflict)
	require.EqualError(t, &domain.EmailTakenError{Email: "j@example.com", Owner: "juliehazz"},
		`email j@example.com already belongs to user "juliehazz"; addresses are compared ignoring case`)
	require.ErrorIs(t, &domain.UserExistsError{Key: "x"}, domain.ErrAlreadyExists)
	require.ErrorIs(t, domain.UserNotFound("x"), domain.ErrNotFound)
}
