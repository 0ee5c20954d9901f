//go:build !race

package watchstream

const raceBuild = false
