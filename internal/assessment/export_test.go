package assessment

// RuleCompiles reports how many scoring rules s has compiled.
func RuleCompiles(s *Service) int64 { return s.rules.Compiles() }

// FinishedListenerUp reports whether s hears that results are finished.
func FinishedListenerUp(s *Service) bool { return s.finished.Online() }
