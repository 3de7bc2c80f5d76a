package assessment

// RuleCompiles reports how many scoring rules s has compiled.
func RuleCompiles(s *Service) int64 { return s.rules.Compiles() }
