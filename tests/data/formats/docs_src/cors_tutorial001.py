from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

app = FastAPI()

origins = ["http://localhost", "http://localhost:8080"]

app.add_middleware(CORSMiddleware, allow_origins=origins, allow_credentials=True)


@app.get("/")
async def main():
    return {"message": "Hello World"}
