// Package configtest checks what a configuration's Validate answers, for
// the table tests of the packages whose configurations refuse what is
// wrong (docs/architecture.md, "Configuration").
package configtest
