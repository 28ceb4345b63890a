package unitytest

import "net/http"

// RedirectTo makes the catalog answer every request with a 307 to the
// same path at redirect (a handler such as cloudtest.Trap.Redirect); nil
// stops it.
func (s *Server) RedirectTo(redirect http.HandlerFunc) {
	s.mu.Lock()
	s.redirect = redirect
	s.mu.Unlock()
}

// EchoToken makes the catalog refuse every request with 401 and the
// request's Authorization header in its message ("Invalid token Bearer
// dapi..."), as servers that echo what they refuse do.
func (s *Server) EchoToken(on bool) { s.echo.Store(on) }

// redirectOrEcho answers r when RedirectTo or EchoToken is on.
func (s *Server) redirectOrEcho(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	redirect := s.redirect
	s.mu.Unlock()
	switch {
	case redirect != nil:
		redirect(w, r)
	case s.echo.Load():
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Invalid token "+r.Header.Get("Authorization"))
	default:
		return false
	}
	return true
}
