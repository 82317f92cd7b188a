package duckdb

import (
	"unsafe"

	"github.com/duckdb/duckdb-go/v2/mapping"
)

// Vector is a borrowed handle to a DuckDB vector. It is valid as long as the
// underlying vector is valid.
type Vector struct {
	v *vector

	// logicalCount is the logical vector size captured when this borrowed handle
	// is created. The current C API cannot read this size from a vector directly.
	// FIXME: Revisit logicalCount when C API v2 is finalized.
	logicalCount int
}

func newVector(v *vector, logicalCount int) Vector {
	return Vector{
		v:            v,
		logicalCount: logicalCount,
	}
}

// vector storage of a DuckDB column.
type vector struct {
	// The vector's type information.
	vectorTypeInfo

	// isJSON distinguishes JSON from ordinary VARCHAR storage. DuckDB stores
	// JSON as VARCHAR, so Type alone cannot tell the two apart, and JSON writes
	// must marshal their input instead of storing it verbatim.
	isJSON bool

	// The underlying DuckDB vector.
	vec mapping.Vector
	// The underlying data ptr.
	dataPtr unsafe.Pointer
	// The vector's validity mask.
	maskPtr unsafe.Pointer
	// A callback function to get a value from this vector.
	getFn fnGetVectorValue
	// The child vectors of nested data types.
	childVectors []vector
	// structTemplate is a pre-allocated map[string]any with all struct keys
	// already inserted (values are nil). Cloned per row in getStruct to avoid
	// re-computing key hashes on every row scan.
	structTemplate map[string]any
}

func (vec *vector) SetValue(rowIdx int, val any) error {
	return setVectorVal(vec, mapping.IdxT(rowIdx), val)
}

//nolint:gocyclo
func (vec *vector) init(logicalType mapping.LogicalType, colIdx int) error {
	t := mapping.GetTypeId(logicalType)
	name, inMap := unsupportedValueTypeToStringMap[t]
	if inMap {
		return addIndexToError(unsupportedTypeError(name), colIdx)
	}

	alias := mapping.LogicalTypeGetAlias(logicalType)
	vec.isJSON = alias == aliasJSON
	if alias == aliasJSON {
		vec.initJSON()
		return nil
	}

	switch t {
	case TYPE_BOOLEAN:
		initBool(vec)
	case TYPE_TINYINT:
		initNumeric[int8](vec, t)
	case TYPE_SMALLINT:
		initNumeric[int16](vec, t)
	case TYPE_INTEGER:
		initNumeric[int32](vec, t)
	case TYPE_BIGINT:
		initNumeric[int64](vec, t)
	case TYPE_UTINYINT:
		initNumeric[uint8](vec, t)
	case TYPE_USMALLINT:
		initNumeric[uint16](vec, t)
	case TYPE_UINTEGER:
		initNumeric[uint32](vec, t)
	case TYPE_UBIGINT:
		initNumeric[uint64](vec, t)
	case TYPE_FLOAT:
		initNumeric[float32](vec, t)
	case TYPE_DOUBLE:
		initNumeric[float64](vec, t)
	case TYPE_TIMESTAMP, TYPE_TIMESTAMP_S, TYPE_TIMESTAMP_MS, TYPE_TIMESTAMP_NS, TYPE_TIMESTAMP_TZ:
		vec.initTS(t)
	case TYPE_DATE:
		vec.initDate()
	case TYPE_TIME, TYPE_TIME_TZ:
		vec.initTime(t)
	case TYPE_INTERVAL:
		vec.initInterval()
	case TYPE_HUGEINT:
		vec.initHugeint()
	case TYPE_UHUGEINT:
		vec.initUhugeint()
	case TYPE_BIGNUM:
		vec.initBignum()
	case TYPE_VARCHAR, TYPE_BLOB, TYPE_GEOMETRY:
		vec.initBytes(t)
	case TYPE_BIT:
		vec.initBit()
	case TYPE_DECIMAL:
		return vec.initDecimal(logicalType, colIdx)
	case TYPE_ENUM:
		return vec.initEnum(logicalType, colIdx)
	case TYPE_LIST:
		return vec.initList(logicalType, colIdx)
	case TYPE_STRUCT:
		return vec.initStruct(logicalType, colIdx)
	case TYPE_MAP:
		return vec.initMap(logicalType, colIdx)
	case TYPE_ARRAY:
		return vec.initArray(logicalType, colIdx)
	case TYPE_UNION:
		return vec.initUnion(logicalType, colIdx)
	case TYPE_UUID:
		vec.initUUID()
	case TYPE_SQLNULL:
		vec.initSQLNull()
	default:
		return addIndexToError(unsupportedTypeError(unknownTypeErrMsg), colIdx)
	}
	return nil
}

func (vec *vector) resizeListVector(newLength mapping.IdxT) {
	mapping.ListVectorReserve(vec.vec, newLength)
	mapping.ListVectorSetSize(vec.vec, newLength)
	vec.resetChildData()
}

func (vec *vector) resetChildData() {
	for i := range vec.childVectors {
		vec.childVectors[i].dataPtr = mapping.VectorGetData(vec.childVectors[i].vec)
		vec.childVectors[i].maskPtr = mapping.VectorGetValidity(vec.childVectors[i].vec)
		vec.childVectors[i].resetChildData()
	}
}

func (vec *vector) initVectors(v mapping.Vector, writable bool) {
	vec.vec = v
	vec.dataPtr = mapping.VectorGetData(v)
	if writable {
		mapping.VectorEnsureValidityWritable(v)
	}
	vec.maskPtr = mapping.VectorGetValidity(v)
	vec.initChildVectors(v, writable)
}

func (vec *vector) initChildVectors(v mapping.Vector, writable bool) {
	switch vec.Type {
	case TYPE_LIST, TYPE_MAP:
		child := mapping.ListVectorGetChild(v)
		vec.childVectors[0].initVectors(child, writable)
	case TYPE_STRUCT, TYPE_UNION:
		for i := range vec.childVectors {
			child := mapping.StructVectorGetChild(v, mapping.IdxT(i))
			vec.childVectors[i].initVectors(child, writable)
		}
	case TYPE_ARRAY:
		child := mapping.ArrayVectorGetChild(v)
		vec.childVectors[0].initVectors(child, writable)
	}
}

func initBool(vec *vector) {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return getPrimitive[bool](vec, rowIdx), nil
	}
	vec.Type = TYPE_BOOLEAN
}

func initNumeric[T numericType](vec *vector, t Type) {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return getPrimitive[T](vec, rowIdx), nil
	}
	vec.Type = t
}

func (vec *vector) initTS(t Type) {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getTS(t, rowIdx), nil
	}
	vec.Type = t
}

func (vec *vector) initDate() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getDate(rowIdx), nil
	}
	vec.Type = TYPE_DATE
}

func (vec *vector) initTime(t Type) {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getTime(rowIdx), nil
	}
	vec.Type = t
}

func (vec *vector) initInterval() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getInterval(rowIdx), nil
	}
	vec.Type = TYPE_INTERVAL
}

func (vec *vector) initHugeint() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getHugeint(rowIdx), nil
	}
	vec.Type = TYPE_HUGEINT
}

func (vec *vector) initUhugeint() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getUhugeint(rowIdx), nil
	}
	vec.Type = TYPE_UHUGEINT
}

func (vec *vector) initBignum() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getBigNum(rowIdx), nil
	}
	vec.Type = TYPE_BIGNUM
}

func (vec *vector) initBytes(t Type) {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getBytes(rowIdx), nil
	}
	vec.Type = t
}

func (vec *vector) initBit() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getBit(rowIdx), nil
	}
	vec.Type = TYPE_BIT
}

func (vec *vector) initJSON() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getJSON(rowIdx)
	}
	vec.Type = TYPE_VARCHAR
}

func (vec *vector) initDecimal(logicalType mapping.LogicalType, colIdx int) error {
	vec.decimalWidth = mapping.DecimalWidth(logicalType)
	vec.decimalScale = mapping.DecimalScale(logicalType)

	t := mapping.DecimalInternalType(logicalType)
	switch t {
	case TYPE_SMALLINT, TYPE_INTEGER, TYPE_BIGINT, TYPE_HUGEINT:
		vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
			if vec.getNull(rowIdx) {
				return nil, nil
			}
			return vec.getDecimal(rowIdx)
		}
	default:
		return addIndexToError(unsupportedTypeError(typeToStringMap[t]), colIdx)
	}

	vec.Type = TYPE_DECIMAL
	vec.internalType = t
	return nil
}

func (vec *vector) initEnum(logicalType mapping.LogicalType, colIdx int) error {
	// Initialize the forward (name→index) and reverse (index→name) dictionaries.
	// enumDict uses a slice because enum indices are dense integers starting at 0,
	// making slice indexing faster than map hashing.
	dictSize := mapping.EnumDictionarySize(logicalType)
	vec.namesDict = make(map[string]uint32, dictSize)
	vec.enumDict = make([]string, dictSize)

	for i := range dictSize {
		str := mapping.EnumDictionaryValue(logicalType, mapping.IdxT(i))
		vec.namesDict[str] = i
		vec.enumDict[i] = str
	}

	t := mapping.EnumInternalType(logicalType)
	switch t {
	case TYPE_UTINYINT, TYPE_USMALLINT, TYPE_UINTEGER, TYPE_UBIGINT:
		vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
			if vec.getNull(rowIdx) {
				return nil, nil
			}
			return vec.getEnum(rowIdx)
		}
	default:
		return addIndexToError(unsupportedTypeError(typeToStringMap[t]), colIdx)
	}

	vec.Type = TYPE_ENUM
	vec.internalType = t
	return nil
}

func (vec *vector) initList(logicalType mapping.LogicalType, colIdx int) error {
	// Get the child vector type.
	childType := mapping.ListTypeChildType(logicalType)
	defer mapping.DestroyLogicalType(&childType)

	// Recurse into the child.
	vec.childVectors = make([]vector, 1)
	err := vec.childVectors[0].init(childType, colIdx)
	if err != nil {
		return err
	}

	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getList(rowIdx)
	}
	vec.Type = TYPE_LIST
	return nil
}

func (vec *vector) initStruct(logicalType mapping.LogicalType, colIdx int) error {
	childCount := mapping.StructTypeChildCount(logicalType)
	var structEntries []StructEntry
	for i := range uint64(childCount) {
		name := mapping.StructTypeChildName(logicalType, mapping.IdxT(i))
		entry, err := NewStructEntry(nil, name)
		structEntries = append(structEntries, entry)
		if err != nil {
			return err
		}
	}

	vec.childVectors = make([]vector, childCount)
	vec.structEntries = structEntries

	// Recurse into the children.
	for i := range uint64(childCount) {
		childType := mapping.StructTypeChildType(logicalType, mapping.IdxT(i))
		err := vec.childVectors[i].init(childType, colIdx)
		mapping.DestroyLogicalType(&childType)
		if err != nil {
			return err
		}
	}

	// Pre-build a template map with all keys hashed once at init time.
	// getStruct clones this per row — keys are already in the hash table,
	// so Clone just copies bucket structure without recomputing key hashes.
	tmpl := make(map[string]any, childCount)
	for i := range uint64(childCount) {
		tmpl[structEntries[i].Name()] = nil
	}
	vec.structTemplate = tmpl

	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getStruct(rowIdx)
	}
	vec.Type = TYPE_STRUCT
	return nil
}

func (vec *vector) initMap(logicalType mapping.LogicalType, colIdx int) error {
	// A MAP is a LIST of STRUCT values. Each STRUCT holds two children: a key and a value.

	// Get the child vector type.
	childType := mapping.ListTypeChildType(logicalType)
	defer mapping.DestroyLogicalType(&childType)

	// Recurse into the child.
	vec.childVectors = make([]vector, 1)
	err := vec.childVectors[0].init(childType, colIdx)
	if err != nil {
		return err
	}

	// DuckDB supports more MAP key types than Go, which only supports comparable types.
	// comparableMapKey in getMap is the guard: it asks the scanned value whether == is
	// safe, so it covers every key type without this switch having to enumerate them.
	//
	// TYPE_UNION cannot be left to that guard. getUnion returns a Union, a struct with a
	// driver.Value field, and a struct type with interface fields is comparable by Go's
	// rules, so reflect reports it as comparable. == still panics once the interface holds
	// an uncomparable dynamic value, which MAP(UNION(b BLOB), ...) produces. Rejecting the
	// type ID up front is the only place that case can be caught.
	//
	// The remaining IDs are redundant with comparableMapKey, but they fail before the first
	// row is scanned and report the column index, so they stay as a fast path.
	keyType := mapping.MapTypeKeyType(logicalType)
	defer mapping.DestroyLogicalType(&keyType)

	t := mapping.GetTypeId(keyType)
	switch t {
	case TYPE_UNION,
		TYPE_LIST, TYPE_STRUCT, TYPE_MAP, TYPE_ARRAY,
		TYPE_BLOB, TYPE_BIT, TYPE_GEOMETRY:
		return addIndexToError(errUnsupportedMapKeyType, colIdx)
	}

	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getMap(rowIdx)
	}
	vec.Type = TYPE_MAP
	return nil
}

func (vec *vector) initArray(logicalType mapping.LogicalType, colIdx int) error {
	vec.arrayLength = mapping.ArrayTypeArraySize(logicalType)

	// Get the child vector type.
	childType := mapping.ArrayTypeChildType(logicalType)
	defer mapping.DestroyLogicalType(&childType)

	// Recurse into the child.
	vec.childVectors = make([]vector, 1)
	err := vec.childVectors[0].init(childType, colIdx)
	if err != nil {
		return err
	}

	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getArray(rowIdx)
	}
	vec.Type = TYPE_ARRAY
	return nil
}

func (vec *vector) initUnion(logicalType mapping.LogicalType, colIdx int) error {
	memberCount := int(mapping.UnionTypeMemberCount(logicalType))

	// The child vector with index zero is the tag vector.
	vec.childVectors = make([]vector, memberCount+1)

	// Initialize the tag vector.
	tagType := mapping.StructTypeChildType(logicalType, 0)
	defer mapping.DestroyLogicalType(&tagType)
	if err := vec.childVectors[0].init(tagType, colIdx); err != nil {
		return err
	}

	// Initialize the members and the dictionaries.
	vec.namesDict = make(map[string]uint32)
	vec.tagDict = make(map[uint32]string)
	for i := range memberCount {
		memberType := mapping.UnionTypeMemberType(logicalType, mapping.IdxT(i))
		err := vec.childVectors[i+1].init(memberType, colIdx)
		mapping.DestroyLogicalType(&memberType)
		if err != nil {
			return err
		}

		name := mapping.UnionTypeMemberName(logicalType, mapping.IdxT(i))
		vec.namesDict[name] = uint32(i)
		vec.tagDict[uint32(i)] = name
	}

	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		return vec.getUnion(rowIdx)
	}
	vec.Type = TYPE_UNION
	return nil
}

func (vec *vector) initUUID() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		if vec.getNull(rowIdx) {
			return nil, nil
		}
		hugeInt := getPrimitive[mapping.HugeInt](vec, rowIdx)
		return hugeIntToUUID(&hugeInt), nil
	}
	vec.Type = TYPE_UUID
}

func (vec *vector) initSQLNull() {
	vec.getFn = func(vec *vector, rowIdx mapping.IdxT) (any, error) {
		return nil, nil
	}
	vec.Type = TYPE_SQLNULL
}
