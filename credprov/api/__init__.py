"""Wire types: pydantic models of every API version, converted to one internal form."""
