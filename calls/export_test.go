package calls

// ValidatePath is validatePath, for the tests of package calls_test.
var ValidatePath = validatePath
