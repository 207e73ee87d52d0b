//go:build race

package newsfeed

// raceBuild: the race detector's shadow memory multiplies a process's
// resident set, so RSS bounds do not hold under -race.
const raceBuild = true
