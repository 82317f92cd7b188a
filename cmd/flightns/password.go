package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/flightns/flightns/internal/auth"
)

// hashPasswordCmd prints the bcrypt hash of a password for the auth
// file's "password" field. It reads the password from standard input:
// typed at a terminal (twice, not echoed), or the first line of a pipe.
func hashPasswordCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		_, _ = fmt.Fprintln(stderr, "Usage: flightns hash-password < password\n\nPrints the bcrypt hash of the password read from standard input (typed at\na terminal, twice, not echoed; or the first line of a pipe), for the\n\"password\" of a user in --auth-file. A password never goes on the command\nline, where other users of the machine could read it.")
		if args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
			return 0
		}
		return 2
	}
	pw, err := readPassword(stdin, stderr)
	if err == nil {
		var h string
		if h, err = auth.HashPassword(pw); err == nil {
			_, _ = fmt.Fprintln(stdout, h)
			return 0
		}
	}
	_, _ = fmt.Fprintf(stderr, "flightns hash-password: %v\n", err)
	return 1
}

func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	if isTerminal(stdin) {
		fd := int(stdin.(*os.File).Fd())
		var typed [2]string
		for i, prompt := range []string{"Password: ", "Again: "} {
			_, _ = fmt.Fprint(stderr, prompt)
			b, err := term.ReadPassword(fd)
			_, _ = fmt.Fprintln(stderr)
			if err != nil {
				return "", err
			}
			typed[i] = string(b)
		}
		if typed[0] != typed[1] {
			return "", fmt.Errorf("the passwords differ")
		}
		return typed[0], nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
